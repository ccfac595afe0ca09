"""OpenAI-compatible chat client: vLLM, llama.cpp servers, OpenAI, Ollama, any remote URL.

Async inside (httpx + a semaphore bounding requests in flight), sync ``chat`` outside.
Structured output goes in ``response_format``:

- ``json_schema`` style (OpenAI, vLLM guided decoding, llama.cpp's C++ ``llama-server``):
  ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``;
- ``json_object`` style (llama-cpp-python's server, whose request model only knows
  ``text``/``json_object``): ``{"type": "json_object", "schema": ...}`` → a GBNF grammar.

If the server rejects one style (HTTP 400/422/500 naming it) the client switches to the other once.
Whatever the server did, the reply is still parsed and validated by ``parse_reply``.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from atomicrag import progress
from atomicrag.llm.base import (
    FatalLLMError,
    RawReply,
    ResultBuilder,
    backoff_delay,
    request_for_attempt,
)
from atomicrag.llm.protocol import ChatRequest, ChatResult

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger(__name__)
# httpx logs every request at INFO; with Hydra's INFO logging that is a line per LLM call, drowning
# the progress bars. Requests are counted by the accountant instead; failures still surface as warnings.
if logging.getLogger("httpx").level == logging.NOTSET:  # a level the user set stays
    logging.getLogger("httpx").setLevel(logging.WARNING)

RESPONSE_FORMAT_STYLES = ("json_schema", "json_object", "none")


class RetryableLLMError(RuntimeError):
    """Transport error, timeout, HTTP 429 or 5xx: worth another attempt after a pause."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def normalize_base_url(base_url: str) -> str:
    """``http://host:port`` → ``http://host:port/v1``; a URL that already has a path is kept."""
    url = base_url.rstrip("/")
    if urlsplit(url).path in ("", "/"):
        url += "/v1"
    return url


def _retry_after(resp: httpx.Response) -> float | None:
    try:
        return float(resp.headers.get("retry-after", ""))
    except ValueError:
        return None


class OpenAIClient:
    """``LLMBackend`` over an OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        structured_output: bool = True,
        response_format_style: str = "json_schema",
        strict: bool = True,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20.0,
        extra_body: dict[str, Any] | None = None,
        server: Any = None,
    ) -> None:
        if response_format_style not in RESPONSE_FORMAT_STYLES:
            raise ValueError(f"response_format_style must be one of {RESPONSE_FORMAT_STYLES}")
        self.base_url = normalize_base_url(base_url)
        self.model = model
        self.api_key_env = api_key_env
        self.concurrency = max(1, concurrency)
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.structured_output = structured_output
        self.response_format_style = response_format_style
        # OpenAI's strict mode demands additionalProperties=false and every property required;
        # vLLM and llama.cpp ignore the flag. Turn it off for looser schemas on api.openai.com.
        self.strict = strict
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.extra_body = dict(extra_body or {})
        # A server this client owns (launched for it): stopped by close(). Anything with stop().
        self.server = server
        self._closed = False

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIClient(base_url={self.base_url!r}, model={self.model!r})"

    # ------------------------------------------------------------------ sync entry point
    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        if not requests:
            return []
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.achat(requests))
        # Called from inside a running loop (a notebook, an async app): asyncio.run would fail
        # there, so the batch runs on its own loop in a worker thread.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.achat(requests)).result()

    async def achat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        """Run a batch concurrently (at most ``concurrency`` in flight); results keep order."""
        sem = asyncio.Semaphore(self.concurrency)
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        timeout = httpx.Timeout(self.timeout_s)
        async with httpx.AsyncClient(timeout=timeout, limits=limits, headers=self._headers()) as client:

            async def one(req: ChatRequest) -> ChatResult:
                async with sem:
                    result = await self._run_one(client, req)
                progress.advance("request")  # moves the bar of the batch as each request finishes
                return result

            return list(await asyncio.gather(*(one(r) for r in requests)))

    # ------------------------------------------------------------------ one request
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        if not self.structured_output or self.response_format_style == "none":
            return None
        if self.response_format_style == "json_object":
            return {"type": "json_object", "schema": schema}
        name = str(schema.get("title", "reply")).replace(" ", "_")[:64] or "reply"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": self.strict}}

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.schema is not None:
            fmt = self._response_format(request.schema)
            if fmt is not None:
                body["response_format"] = fmt
        body.update(self.extra_body)
        return body

    async def _post(self, client: httpx.AsyncClient, request: ChatRequest) -> RawReply:
        url = f"{self.base_url}/chat/completions"
        for switched in (False, True):
            body = self.payload(request)
            try:
                # httpx's timeout is per read/write; wait_for bounds the whole request.
                resp = await asyncio.wait_for(client.post(url, json=body), self.timeout_s)
            except (asyncio.TimeoutError, httpx.TimeoutException):
                raise RetryableLLMError(f"timeout after {self.timeout_s:g}s") from None
            except httpx.TransportError as exc:
                raise RetryableLLMError(f"{type(exc).__name__}: {exc}") from None
            if (  # llama-cpp-python reports request validation errors as HTTP 500
                resp.status_code in (400, 422, 500)
                and "response_format" in body
                and not switched
                and any(w in resp.text for w in ("response_format", "json_schema", "json_object"))
            ):
                # The server does not know this structured-output dialect: try the other one.
                # Derived from what was *sent*, so concurrent rejections agree on the switch.
                sent = body["response_format"]["type"]
                other = "json_object" if sent == "json_schema" else "json_schema"
                if self.response_format_style != other:
                    log.warning("server rejected response_format %s (HTTP %s); switching to %s",
                                sent, resp.status_code, other)
                self.response_format_style = other
                continue
            if resp.status_code == 429 or resp.status_code >= 500:
                raise RetryableLLMError(
                    f"HTTP {resp.status_code}: {resp.text[:300]}", retry_after=_retry_after(resp)
                )
            if resp.status_code >= 400:
                raise FatalLLMError(f"HTTP {resp.status_code} from {url}: {resp.text[:500]}")
            return self._parse_response(resp)
        raise FatalLLMError("unreachable")  # pragma: no cover

    def _parse_response(self, resp: httpx.Response) -> RawReply:
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice.get("message", {}).get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise RetryableLLMError(f"malformed response body ({exc}): {resp.text[:300]}") from None
        usage = data.get("usage") or {}
        return RawReply(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
            model=str(data.get("model") or self.model),
        )

    async def _run_one(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatResult:
        builder = ResultBuilder(self.model)
        parse_failed = False
        retry_after: float | None = None
        for attempt in range(self.max_retries + 1):
            if attempt and not parse_failed:  # back off after server trouble, not after bad JSON
                pause = backoff_delay(attempt, self.backoff_base_s, self.backoff_max_s)
                if retry_after is not None:  # the server said how long to wait (429/503)
                    pause = max(pause, min(retry_after, self.backoff_max_s))
                await asyncio.sleep(pause)
                retry_after = None
            req = request_for_attempt(request, attempt, parse_failed)
            try:
                raw = await self._post(client, req)
            except RetryableLLMError as exc:
                builder.add_error(str(exc))
                retry_after, parse_failed = exc.retry_after, False
                continue
            except FatalLLMError as exc:
                builder.add_error(str(exc))
                break
            if builder.add_reply(request, raw):
                break
            parse_failed = True
            log.debug("attempt %d: unusable reply: %s", attempt + 1, builder.result.error)
        return builder.finish()

    # ------------------------------------------------------------------ lifecycle
    def models(self) -> list[str]:
        """Model ids the server serves (GET /v1/models)."""
        resp = httpx.get(f"{self.base_url}/models", headers=self._headers(), timeout=self.timeout_s)
        resp.raise_for_status()
        return [m.get("id", "") for m in resp.json().get("data", [])]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.server is not None:
                self.server.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
