"""The one protocol every LLM backend speaks.

A backend takes a *batch* of chat requests and returns one result per request, in order.
Requests carry an optional JSON schema; a backend that supports structured output passes it
on (vLLM guided decoding, llama.cpp grammars, OpenAI ``response_format``), and every backend
parses and validates the reply against it. A reply that cannot be parsed after the retries
is returned with ``error`` set and ``parsed=None``: callers count it as a failure, they never
treat it as an empty result.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from atomicrag.core.config import LLMConfig

# HTTP header of an OpenAI-compatible request sent again after a transport error or timeout: how
# many resends of that request came before it (absent: the first sending). A server or a recording
# proxy tells a resend from a second call by it, as by the OpenAI SDK's ``x-stainless-retry-count``.
RESEND_HEADER = "x-atomicrag-resend"


@dataclass
class ChatRequest:
    messages: list[dict[str, str]]  # OpenAI chat format: [{"role": ..., "content": ...}]
    schema: dict[str, Any] | None = None  # JSON schema of the expected reply (None = free text)
    temperature: float = 0.0
    # the default budget (llm.max_tokens); stages pass their own; None = no cap sent (the released
    # code's calls: the server's own limit applies)
    max_tokens: int | None = LLMConfig.max_tokens
    seed: int | None = 0
    module: str = "default"  # pipeline module, for token/time accounting (e.g. "sieve")
    # The last message is the assistant's reply so far and the model continues it (vLLM's
    # continue_final_message); only sent to a backend whose ``continues_replies`` is True.
    continue_reply: bool = False
    # An empty free-text reply is a reply (the released code takes ""), not a failure to re-ask:
    # set for every request under ``fidelity.empty_replies=accepted`` (``retry.EmptyRepliesAccepted``)
    accept_empty: bool = False
    # the n-th asking of the same request (the released judge asks its classification again): keys
    # the LLM cache apart, so a retry is a new call and not the cached copy of the reply that failed;
    # never sent to the server
    attempt: int = 0
    # OpenAI's frequency_penalty (0: off): lowers the odds of tokens by how often the reply has
    # used them, the loop guard a small reader needs (reader.frequency_penalty); sent only when set
    frequency_penalty: float = 0.0
    # Seconds the reply may take once the request is under way (its concurrency slot taken), its
    # resends included; None: no limit. Past it the request ends as a failed result with
    # ``timed_out`` set and is not sent again (the released code bounds its sieve tasks so, and does
    # not re-ask after). Honoured by a backend whose ``honours_deadline`` is True (the
    # OpenAI-compatible client); never sent to the server and not part of the cache key.
    deadline_s: float | None = None


@dataclass
class ChatResult:
    text: str = ""
    parsed: Any = None  # the validated JSON object when the request had a schema
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    latency_s: float = 0.0
    attempts: int = 1
    # attempts that ended without a reply (timeout, connection or HTTP error): the server may have
    # read their prompt, but it reported no tokens, so prompt_tokens / attempts undercounts a prompt
    errored_attempts: int = 0
    error: str | None = None  # set when the call (or its JSON) failed after retries
    model: str = ""
    # On a cache hit prompt/completion_tokens are 0 (no new tokens were spent); the counts of
    # the original call are kept here so token budgets of a run can still be reported.
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    finish_reason: str | None = None  # 'stop' | 'length' (truncated) | ... when the backend says
    # the request's ``deadline_s`` passed before a usable reply came (``error`` says so too)
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class LLMBackend(Protocol):
    model: str

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        """Run a batch of requests (concurrently where the backend can); results keep order."""
        ...

    def close(self) -> None:
        ...


def backend_attribute(llm: Any, name: str, accept: Callable[[Any], bool]) -> Any:
    """The first value of attribute ``name`` that ``accept`` takes, on ``llm`` or on the backends it
    wraps (cache, accounting: each wrapper's ``backend``); None when none has one."""
    seen = 0
    while llm is not None and seen < 8:
        value = getattr(llm, name, None)
        if accept(value):
            return value
        llm, seen = getattr(llm, "backend", None), seen + 1
    return None


def honours_deadline(llm: Any) -> bool:
    """True when ``llm``, or the backend it wraps, cuts a request off at its ``deadline_s``. An
    in-process backend (fake, transformers) cannot stop a generation midway and says False."""
    return bool(backend_attribute(llm, "honours_deadline", lambda v: isinstance(v, bool)))


def request_deadline(llm: Any, setting: str, limit: float | None) -> float | None:
    """A stage's per-request limit (``setting``, e.g. ``sieve.timeout_s``) as ``ChatRequest.deadline_s``:
    None for 0 or None (no limit). A limit ``llm`` cannot honour is logged once, so a user who set
    one is not misled into thinking requests stop at it."""
    if not limit or limit <= 0:
        return None
    if not honours_deadline(llm):
        import logging

        logging.getLogger("atomicrag").warning(
            "%s=%g is not honoured by this LLM backend (%s: an in-process generation cannot be cut "
            "short); its requests wait for their replies", setting, limit, getattr(llm, "model", type(llm).__name__))
    return limit


def continues_replies(llm: Any) -> bool:
    """True when ``llm``, or the backend it wraps, can continue an assistant reply
    (``ChatRequest.continue_reply``)."""
    return bool(backend_attribute(llm, "continues_replies", lambda v: isinstance(v, bool)))
