"""Retry and parse logic shared by every backend.

One attempt = one generation. An attempt fails when generation raises (transport error,
5xx, timeout) or when ``parse_reply`` cannot turn the text into a schema-valid object. A
request gets ``1 + max_retries`` attempts; tokens of every attempt are counted (they were
spent). After the last failed attempt the result has ``error`` set and ``parsed=None``.
"""
from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from atomicrag.core import progress
from atomicrag.llm.json_repair import ReplyParseError, parse_reply
from atomicrag.llm.protocol import ChatRequest, ChatResult

if TYPE_CHECKING:
    from typing_extensions import Self

# A greedy model that produced broken JSON produces the same broken JSON again, so a retry
# after a *parse* failure samples a little (seeded, so still reproducible).
RETRY_TEMPERATURE = 0.3


class FatalLLMError(RuntimeError):
    """A failure that retrying cannot fix (e.g. HTTP 400/401/404); the request fails at once."""


@dataclass
class RawReply:
    """What one generation attempt returned, before parsing."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    model: str = ""


def request_for_attempt(request: ChatRequest, attempt: int, parse_failed: bool) -> ChatRequest:
    """The request to send on ``attempt`` (0-based); perturbed only after a parse failure."""
    if attempt == 0 or not parse_failed:
        return request
    return dataclasses.replace(
        request,
        temperature=max(request.temperature, RETRY_TEMPERATURE),
        seed=(request.seed or 0) + attempt,
    )


def backoff_delay(attempt: int, base_s: float, cap_s: float) -> float:
    """Exponential backoff with jitter before retry number ``attempt`` (1-based)."""
    delay = min(cap_s, base_s * (2 ** (attempt - 1)))
    return delay * (1.0 + 0.25 * random.random())  # jitter spreads retries of a batch apart


def check_reply(request: ChatRequest, raw: RawReply) -> tuple[Any, str | None]:
    """(parsed, None) when the reply is usable, else (None, error message).

    Free-text requests have ``parsed=None``; an empty free-text reply counts as a failure
    (a caller must never mistake "the model said nothing" for an answer), unless the request says
    it is a reply (``accept_empty``: the released code's reading, whose parsers then count it).
    """
    if request.schema is None:
        return (None, None) if raw.text.strip() or request.accept_empty else (None, "empty reply")
    try:
        return parse_reply(raw.text, request.schema), None
    except ReplyParseError as exc:
        note = " (reply truncated at max_tokens)" if raw.finish_reason == "length" else ""
        return None, f"{exc}{note}"


class ResultBuilder:
    """Accumulates attempts of one request into a ``ChatResult``."""

    def __init__(self, model: str) -> None:
        self.result = ChatResult(model=model, attempts=0)
        self._t0 = time.perf_counter()

    def add_reply(self, request: ChatRequest, raw: RawReply) -> bool:
        """Record one attempt's reply; True when it parsed and the request is done."""
        r = self.result
        r.attempts += 1
        r.text = raw.text
        r.prompt_tokens += raw.prompt_tokens
        r.completion_tokens += raw.completion_tokens
        r.finish_reason = raw.finish_reason
        r.model = raw.model or r.model
        parsed, err = check_reply(request, raw)
        r.parsed, r.error = parsed, err
        return err is None

    def add_error(self, error: str) -> None:
        self.result.attempts += 1
        self.result.errored_attempts += 1
        self.result.parsed = None
        self.result.error = error

    def finish(self) -> ChatResult:
        self.result.latency_s = time.perf_counter() - self._t0
        if self.result.error is not None:
            self.result.parsed = None
            self.result.error = f"failed after {self.result.attempts} attempt(s): {self.result.error}"
        return self.result


class SyncBackend:
    """Base for in-process backends: subclasses implement ``_generate`` for one request."""

    model: str = ""
    max_retries: int = 3
    # a generation in this process cannot be cut off midway: ChatRequest.deadline_s is not honoured
    # (callers ask ``protocol.honours_deadline`` and warn that their timeout does not apply)
    honours_deadline = False

    def _generate(self, request: ChatRequest, attempt: int) -> RawReply:  # pragma: no cover
        raise NotImplementedError

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return [self._run_one(r) for r in requests]

    def _run_one(self, request: ChatRequest) -> ChatResult:
        builder = ResultBuilder(self.model)
        parse_failed = False
        for attempt in range(self.max_retries + 1):
            req = request_for_attempt(request, attempt, parse_failed)
            try:
                raw = self._generate(req, attempt)
            except FatalLLMError as exc:
                builder.add_error(str(exc))
                break
            except Exception as exc:  # noqa: BLE001  any generation error is retried, then reported
                builder.add_error(f"{type(exc).__name__}: {exc}")
                parse_failed = False
                continue
            if builder.add_reply(request, raw):
                break
            parse_failed = True
        result = builder.finish()
        progress.advance("request")  # moves the bar of the batch this request belongs to
        return result

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EmptyRepliesAccepted:
    """``LLMBackend`` wrapper for ``fidelity.empty_replies=accepted``: every free-text request takes
    an empty reply as the reply, as the released code does, instead of re-asking warmer."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.model = backend.model

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return self.backend.chat([dataclasses.replace(r, accept_empty=True) for r in requests])

    def stream(self, request: ChatRequest) -> Any:
        return self.backend.stream(dataclasses.replace(request, accept_empty=True))

    def close(self) -> None:
        self.backend.close()

    def __getattr__(self, name: str) -> Any:  # anything else of the backend (continues_replies, ...)
        return getattr(self.backend, name)
