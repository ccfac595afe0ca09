"""Which adapter a user's model object needs: ``as_llm`` and ``as_embedder``.

Kept apart from the adapters themselves so each adapter module imports only what it wraps
(``byo`` and ``langchain`` would otherwise import each other).
"""
from __future__ import annotations

import inspect
from typing import Any

from atomicrag.library.adapters.byo import EmbedderAdapter, GenerateLLM
from atomicrag.library.adapters.langchain import LangChainLLM


def _is_native_embedder(obj: Any) -> bool:
    """An atomicrag embedder already: ``encode(texts, *, is_query)`` plus ``name`` and ``dim``."""
    if not (isinstance(getattr(obj, "name", None), str) and isinstance(getattr(obj, "dim", None), int)):
        return False
    try:
        return "is_query" in inspect.signature(obj.encode).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def as_llm(obj: Any) -> Any:
    """``obj`` as an atomicrag LLM backend (``chat``); None stays None."""
    if obj is None or callable(getattr(obj, "chat", None)):
        return obj
    if callable(getattr(obj, "generate", None)):
        return GenerateLLM(obj)
    if callable(getattr(obj, "invoke", None)):
        return LangChainLLM(obj)
    raise TypeError(f"{type(obj).__name__} is not an LLM: it needs chat(list[ChatRequest]), generate(prompt) "
                    f"or invoke(messages)")


def as_embedder(obj: Any) -> Any:
    """``obj`` as an atomicrag embedder (``encode`` + ``name`` + ``dim``); None stays None."""
    if obj is None or _is_native_embedder(obj):
        return obj
    return EmbedderAdapter(obj)
