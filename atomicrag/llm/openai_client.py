"""OpenAI-compatible chat client: vLLM, llama.cpp servers, OpenAI, Ollama, any remote URL.

Async inside (httpx + a semaphore bounding requests in flight), sync ``chat`` outside.
Structured output goes in ``response_format``:

- ``json_schema`` style (OpenAI, vLLM guided decoding, llama.cpp's C++ ``llama-server``):
  ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``;
- ``json_object`` style (llama-cpp-python's server, whose request model only knows
  ``text``/``json_object``): ``{"type": "json_object", "schema": ...}`` → a GBNF grammar.

If the server rejects the configured style (HTTP 400/422/500 naming it) the request fails with an
error naming the model and the setting (``llm.structured_output``, or the client's
``response_format_style``): the client never switches dialect itself.
Some servers ignore a dialect they do not know *silently* (vLLM), so ``probe()`` asks each
server what it is first (``probe.py``); the factory does that for every server it attaches to
or launches. Whatever the server did, the reply is still parsed and validated by ``parse_reply``.

``base_urls`` with several replicas of one model spreads requests over them (``endpoints.py``:
least outstanding requests first, a dead endpoint skipped while the others finish its work).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
from collections.abc import Generator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from atomicrag.core import progress
from atomicrag.llm.endpoints import Endpoint, EndpointPool
from atomicrag.llm.probe import LOCAL_KINDS, ServerInfo, check_model_served, probe_server
from atomicrag.llm.protocol import RESEND_HEADER, ChatRequest, ChatResult
from atomicrag.llm.retry import (
    FatalLLMError,
    RawReply,
    ResultBuilder,
    backoff_delay,
    request_for_attempt,
)

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

    def __init__(self, message: str, retry_after: float | None = None, endpoint_down: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.endpoint_down = endpoint_down  # the connection failed: try another replica


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

    # ChatRequest.deadline_s bounds a request's attempts together (``_run_one``); ``stream`` does not
    # take one (a streamed reply is shown as it comes)
    honours_deadline = True

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
        base_urls: list[str] | None = None,
        context_window: int | None = None,
        continues_replies: bool = False,
    ) -> None:
        if response_format_style not in RESPONSE_FORMAT_STYLES:
            raise ValueError(f"response_format_style must be one of {RESPONSE_FORMAT_STYLES}")
        urls = [normalize_base_url(u) for u in (base_urls or [base_url])]
        self.pool = EndpointPool(urls, response_format_style)
        self.base_url = urls[0]
        self.model = model
        # Tokens (prompt + completion) a request may use: from the servers when probed, else this.
        self.configured_context_window = context_window
        self.api_key_env = api_key_env
        self.concurrency = max(1, concurrency)
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.structured_output = structured_output
        # OpenAI's strict mode demands additionalProperties=false and every property required;
        # vLLM and llama.cpp ignore the flag. Turn it off for looser schemas on api.openai.com.
        self.strict = strict
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.extra_body = dict(extra_body or {})
        # The server continues a final assistant message when asked (vLLM's chat parameters
        # continue_final_message / add_generation_prompt); OpenAI's API rejects them.
        self.continues_replies = continues_replies
        # A server this client owns (launched for it): stopped by close(). Anything with stop().
        self.server = server
        self._closed = False

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIClient(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def response_format_style(self) -> str:
        return self.pool.endpoints[0].style

    @response_format_style.setter
    def response_format_style(self, style: str) -> None:
        for ep in self.pool.endpoints:
            ep.style = style

    @property
    def context_window(self) -> int | None:
        """The smallest context any endpoint accepts (prompts are budgeted to it), if known."""
        known = [e.context_window for e in self.pool.endpoints if e.context_window]
        return min(known) if known else self.configured_context_window

    def endpoint_stats(self) -> list[dict[str, Any]]:
        """Per endpoint: requests sent, replies, errors and the tokens the server reported."""
        return self.pool.stats()

    def probe(self, *, check_model: bool = True) -> list[ServerInfo]:
        """Ask every endpoint what it is: set its dialect and context window, and (for local
        servers: vLLM, llama.cpp) fail with the served ids when ``self.model`` is not served."""
        infos = []
        for ep in self.pool.endpoints:
            info = probe_server(ep.url, headers=self._headers(), timeout_s=min(self.timeout_s, 30.0))
            if check_model and info.kind in LOCAL_KINDS:
                check_model_served(info, self.model)
            ep.kind, ep.style = info.kind, info.response_format_style
            ep.context_window = info.context_window or ep.context_window
            log.info("LLM endpoint %s: %s, dialect %s, context %s", ep.url, info.kind, ep.style,
                     ep.context_window or "unknown")
            infos.append(info)
        return infos

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
        # ``concurrency`` requests in flight per endpoint; the pool spreads them over endpoints.
        in_flight = self.concurrency * len(self.pool.endpoints)
        sem = asyncio.Semaphore(in_flight)
        limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
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

    def _response_format(self, schema: dict[str, Any], style: str) -> dict[str, Any] | None:
        if not self.structured_output or style == "none":
            return None
        if style == "json_object":
            return {"type": "json_object", "schema": schema}
        name = str(schema.get("title", "reply")).replace(" ", "_")[:64] or "reply"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": self.strict}}

    def payload(self, request: ChatRequest, style: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.frequency_penalty:
            body["frequency_penalty"] = request.frequency_penalty
        if request.continue_reply:
            if not self.continues_replies:
                raise FatalLLMError(f"{self.base_url} is not known to continue a reply (continue_reply)")
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        if request.schema is not None:
            fmt = self._response_format(request.schema, style or self.response_format_style)
            if fmt is not None:
                body["response_format"] = fmt
        body.update(self.extra_body)
        return body

    async def _post(self, client: httpx.AsyncClient, request: ChatRequest, ep: Endpoint,
                    resend: int = 0) -> RawReply:
        """One HTTP attempt; ``resend`` > 0: the same body sent again after a transport error or
        timeout, said in a header so a server or proxy can tell it from a new call (as the OpenAI
        SDK's ``x-stainless-retry-count`` does)."""
        url = f"{ep.url}/chat/completions"
        body = self.payload(request, ep.style)
        headers = {RESEND_HEADER: str(resend)} if resend else None
        try:
            # httpx's timeout is per read/write; wait_for bounds the whole request.
            resp = await asyncio.wait_for(client.post(url, json=body, headers=headers), self.timeout_s)
        except (asyncio.TimeoutError, httpx.TimeoutException):
            raise RetryableLLMError(f"timeout after {self.timeout_s:g}s at {ep.url}") from None
        except httpx.TransportError as exc:
            # Refused, reset or closed mid-reply: the server is gone or restarting.
            raise RetryableLLMError(f"{type(exc).__name__} at {ep.url}: {exc}", endpoint_down=True) from None
        if resp.status_code == 400 and "Invalid schema" in resp.text:
            # OpenAI strict mode refused the schema itself: a bug in the schema, not an unknown
            # dialect. Retrying without it would silently drop the constraint.
            raise FatalLLMError(f"HTTP 400 from {url}: {resp.text[:500]}")
        if (  # llama-cpp-python reports request validation errors as HTTP 500
            resp.status_code in (400, 422, 500)
            and "response_format" in body
            and any(w in resp.text for w in ("response_format", "json_schema", "json_object"))
        ):
            # The server does not know this structured-output dialect. Switching dialects
            # here would change what constrains the replies behind the user's back: it is
            # the user's setting (or the factory's probe) that names the dialect.
            sent = body["response_format"]["type"]
            other = "json_object" if sent == "json_schema" else "json_schema"
            raise FatalLLMError(
                f"server {ep.url} (model {self.model!r}) rejected response_format {sent!r} "
                f"(HTTP {resp.status_code}): set llm.structured_output=false to send no schema, or "
                f"build the client with response_format_style={other!r}; {resp.text[:300]}"
            )
        if resp.status_code == 429 or resp.status_code >= 500:
            raise RetryableLLMError(
                f"HTTP {resp.status_code}: {resp.text[:300]}", retry_after=_retry_after(resp)
            )
        if resp.status_code >= 400:
            raise FatalLLMError(f"HTTP {resp.status_code} from {url}: {resp.text[:500]}")
        return self._parse_response(resp)

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
        if not request.deadline_s or request.deadline_s <= 0:
            await self._attempts(client, request, builder)
            return builder.finish()
        # The deadline runs from here, after the request got its concurrency slot (as the released
        # code's asyncio.wait_for inside its semaphore), and covers every resend and backoff pause.
        try:
            await asyncio.wait_for(self._attempts(client, request, builder), request.deadline_s)
        except asyncio.TimeoutError:
            # the attempt in flight was cancelled (its connection closed); no resend: the released
            # code does not ask again after its timeout, and a late reply is not a reply
            builder.add_error(f"timed out: no reply {request.deadline_s:g} s after the request was sent "
                              "(ChatRequest.deadline_s)")
            builder.result.timed_out = True
        return builder.finish()

    async def _attempts(self, client: httpx.AsyncClient, request: ChatRequest, builder: ResultBuilder) -> None:
        """Send ``request`` until a usable reply, a fatal error or the retries run out."""
        parse_failed = failover = False
        retry_after: float | None = None
        # An attempt lost to a dead replica while another one is up does not use up a retry
        # (its requests must finish elsewhere); ``hops`` bounds that for a flapping pool.
        attempt = hops = resend = 0
        while attempt <= self.max_retries:
            # Back off after server trouble, not after bad JSON, nor when another replica takes over.
            if attempt and not parse_failed and not failover:
                pause = backoff_delay(attempt, self.backoff_base_s, self.backoff_max_s)
                if retry_after is not None:  # the server said how long to wait (429/503)
                    pause = max(pause, min(retry_after, self.backoff_max_s))
                await asyncio.sleep(pause)
                retry_after = None
            req = request_for_attempt(request, attempt, parse_failed)
            ep = self.pool.acquire()
            try:
                raw = await self._post(client, req, ep, resend)
            except RetryableLLMError as exc:
                self.pool.release(ep, ok=False)
                resend += 1  # the next attempt is a resend (after bad JSON it is a new asking)
                builder.add_error(str(exc))
                retry_after, parse_failed = exc.retry_after, False
                if exc.endpoint_down:
                    self.pool.mark_down(ep, str(exc))
                failover = exc.endpoint_down and self.pool.any_other_live(ep)
                hops += failover
                if not failover or hops > 2 * len(self.pool.endpoints):
                    attempt += 1
                continue
            except FatalLLMError as exc:
                self.pool.release(ep, ok=False)
                builder.add_error(str(exc))
                break
            except BaseException:  # cancelled: keep the in-flight count right
                self.pool.release(ep, ok=False)
                raise
            self.pool.release(ep, ok=True, prompt_tokens=raw.prompt_tokens,
                              completion_tokens=raw.completion_tokens)
            failover = False
            attempt += 1
            if builder.add_reply(request, raw):
                break
            parse_failed, resend = True, 0
            log.debug("attempt %d: unusable reply: %s", attempt, builder.result.error)

    # ------------------------------------------------------------------ streaming
    def stream(self, request: ChatRequest) -> Generator[str, None, ChatResult]:
        """One free-text request streamed (``"stream": true``, server-sent events): yields the reply's
        text as it arrives and returns the whole ``ChatResult``. No retry once text has been
        yielded (the caller has shown it); an error before that is returned as a failed result."""
        if request.schema is not None:
            raise ValueError("stream() is for free-text requests (schema=None)")
        builder = ResultBuilder(self.model)
        body = {**self.payload(request), "stream": True, "stream_options": {"include_usage": True}}
        ep = self.pool.acquire()
        parts: list[str] = []
        raw = RawReply(text="", model=self.model)
        try:
            with httpx.Client(timeout=httpx.Timeout(self.timeout_s), headers=self._headers()) as client, \
                    client.stream("POST", f"{ep.url}/chat/completions", json=body) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    raise FatalLLMError(f"HTTP {resp.status_code} from {ep.url}: {resp.text[:500]}")
                for line in resp.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    event = json.loads(data)
                    usage = event.get("usage") or {}
                    raw.prompt_tokens = int(usage.get("prompt_tokens") or raw.prompt_tokens)
                    raw.completion_tokens = int(usage.get("completion_tokens") or raw.completion_tokens)
                    raw.model = str(event.get("model") or raw.model)
                    for choice in event.get("choices") or []:
                        piece = (choice.get("delta") or {}).get("content") or ""
                        if piece:
                            parts.append(piece)
                            yield piece
                        raw.finish_reason = choice.get("finish_reason") or raw.finish_reason
        except (httpx.HTTPError, FatalLLMError, ValueError) as exc:
            self.pool.release(ep, ok=False)
            builder.add_error(f"{type(exc).__name__}: {exc}" if not isinstance(exc, FatalLLMError) else str(exc))
            builder.result.text = "".join(parts)
            return builder.finish()
        self.pool.release(ep, ok=True, prompt_tokens=raw.prompt_tokens, completion_tokens=raw.completion_tokens)
        raw.text = "".join(parts)
        builder.add_reply(request, raw)
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
