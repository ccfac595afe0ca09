"""Streaming one chat request through any backend.

A backend streams when it has ``stream(request)``: a generator that yields the reply's text as
it arrives and returns the whole ``ChatResult`` (``OpenAIClient`` over server-sent events; the
cache and accounting wrappers pass it through, recording and storing the result as ``chat``
does). A backend without one (in-process models, the fake test LLM, your own ``chat()`` object)
answers with ``chat`` and its reply is yielded whole: callers see one code path either way.
"""
from __future__ import annotations

from collections.abc import Generator
from typing import Any

from atomicrag.llm.protocol import ChatRequest, ChatResult


def _stream_method(llm: Any) -> Any:
    """``llm.stream`` when ``llm`` (or what a lending wrapper forwards to) streams, else None."""
    try:
        method = getattr(llm, "stream", None)
    except Exception:  # a wrapper's __getattr__ that cannot answer: no streaming
        return None
    return method if callable(method) else None


def stream_chat(llm: Any, request: ChatRequest) -> Generator[str, None, ChatResult]:
    """Yield the reply's text chunks; return its ``ChatResult`` (``result = yield from stream_chat(...)``)."""
    method = _stream_method(llm)
    if method is not None:
        return (yield from method(request))
    results = llm.chat([request])
    if len(results) != 1:
        raise RuntimeError(f"LLM returned {len(results)} results for 1 request")
    result = results[0]
    if result.text:
        yield result.text
    return result
