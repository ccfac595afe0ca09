"""Duck-typed model objects -> atomicrag's LLM (``chat``) and embedder (``encode``) protocols.

Why adapters instead of base classes: users bring objects from other libraries (or the other
AtomicRAG library's ``generate(prompt) -> str``); requiring inheritance would force them to
write glue. The adapters add what the pipeline relies on: JSON replies parsed and validated
against the request's schema with retries (``SyncBackend`` + ``parse_reply``, the same path the
built-in backends use), and embeddings as L2-normalised float32 tensors with a ``name`` and ``dim``.
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from atomicrag.engine.api import ChatRequest, ChatResult, RawReply, SyncBackend

_SCHEMA_HINT = "\n\nReply with only a JSON value that matches this JSON schema:\n"


def _model_name(obj: Any) -> str:
    for attr in ("model", "model_name", "name"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(obj).__name__


def render_prompt(request: ChatRequest) -> str:
    """One prompt string from chat messages (system and user text in order, assistant turns
    marked), plus the JSON schema when the request expects structured output."""
    parts = []
    for m in request.messages:
        content = str(m.get("content", ""))
        parts.append(f"Assistant: {content}" if m.get("role") == "assistant" else content)
    prompt = "\n\n".join(p for p in parts if p)
    if request.schema is not None:
        prompt += _SCHEMA_HINT + json.dumps(request.schema, ensure_ascii=False)
    return prompt


def reply_text(reply: Any) -> str:
    """Text of a reply that may be a str, a message object (``.content``) or content blocks."""
    content = getattr(reply, "content", reply)
    if isinstance(content, list):  # LangChain/Anthropic-style blocks: [{"type": "text", "text": ...}]
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    if isinstance(content, (dict, list)):
        return json.dumps(content)
    return "" if content is None else str(content)


class PromptLLM(SyncBackend):
    """Base of adapters whose model takes one prompt (or message list) and returns text.

    ``concurrency > 1`` runs the requests of a batch in threads (the wrapped call is usually a
    blocking HTTP request, so threads overlap the waiting).
    """

    def __init__(self, obj: Any, *, model: str | None = None, max_retries: int = 2, concurrency: int = 1) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.obj = obj
        self.model = model or _model_name(obj)
        self.max_retries = max_retries
        self.concurrency = concurrency

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        if self.concurrency == 1 or len(requests) < 2:
            return [self._run_one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._run_one, requests))

    def close(self) -> None:
        close = getattr(self.obj, "close", None)
        if callable(close):
            close()


class GenerateLLM(PromptLLM):
    """Wraps an object with ``generate(prompt: str) -> str`` (the other AtomicRAG library's protocol)."""

    def _generate(self, request: ChatRequest, attempt: int) -> RawReply:
        return RawReply(text=reply_text(self.obj.generate(render_prompt(request))), model=self.model)


class EmbedderAdapter:
    """Wraps ``encode`` / ``embed_batch`` / ``embed_text`` / ``embed_documents`` objects.

    Outputs are float32 CPU tensors ``[n, dim]``, L2-normalised (cosine = dot product is what the
    graph's synonym edges and seeds assume). ``dim`` is read from the object when it says so,
    else measured once by embedding a probe text.
    """

    def __init__(self, obj: Any, *, name: str | None = None, dim: int | None = None) -> None:
        self.obj = obj
        self._encode = self._pick(obj)
        self.name = name or f"byo:{_model_name(obj)}"
        self.dim = int(dim or self._declared_dim(obj) or self._raw(["dimension probe"], False).shape[1])

    @staticmethod
    def _declared_dim(obj: Any) -> int | None:
        dim = getattr(obj, "dim", None)
        if isinstance(dim, int) and dim > 0:
            return dim
        for getter in ("get_embedding_dimension", "get_sentence_embedding_dimension"):  # sentence-transformers
            fn = getattr(obj, getter, None)
            if callable(fn):
                value = fn()
                if isinstance(value, int) and value > 0:
                    return value
        return None

    @staticmethod
    def _pick(obj: Any) -> Callable[[list[str], bool], Any]:
        if callable(getattr(obj, "encode", None)):
            try:
                params = inspect.signature(obj.encode).parameters
            except (TypeError, ValueError):
                params = {}
            if "is_query" in params:
                return lambda texts, q: obj.encode(texts, is_query=q)
            return lambda texts, q: obj.encode(texts)
        if callable(getattr(obj, "embed_documents", None)):  # LangChain Embeddings
            has_query = callable(getattr(obj, "embed_query", None))
            return lambda texts, q: ([obj.embed_query(t) for t in texts] if q and has_query
                                     else obj.embed_documents(texts))
        if callable(getattr(obj, "embed_batch", None)):
            return lambda texts, q: obj.embed_batch(texts)
        if callable(getattr(obj, "embed_text", None)):
            return lambda texts, q: [obj.embed_text(t) for t in texts]
        raise TypeError(f"{type(obj).__name__} is not an embedder: it needs encode(texts), embed_batch(texts), "
                        f"embed_text(text) or embed_documents(texts)")

    def _raw(self, texts: list[str], is_query: bool) -> torch.Tensor:
        out = self._encode(list(texts), is_query)
        if isinstance(out, torch.Tensor):
            emb = out.detach().to("cpu", torch.float32)
        else:
            emb = torch.from_numpy(np.asarray(out, dtype=np.float32).copy())
        if emb.ndim == 1 and len(texts) == 1:
            emb = emb.unsqueeze(0)
        if emb.ndim != 2 or emb.shape[0] != len(texts):
            raise ValueError(f"embedder {self.name if hasattr(self, 'name') else type(self.obj).__name__!r} "
                             f"returned shape {tuple(emb.shape)} for {len(texts)} texts")
        return emb

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        if not texts:
            return torch.empty(0, self.dim)
        emb = self._raw(texts, is_query)
        if emb.shape[1] != self.dim:
            raise ValueError(f"embedder {self.name!r} declared dim={self.dim} but returned {emb.shape[1]} dims")
        return torch.nn.functional.normalize(emb, dim=1)

    def __repr__(self) -> str:
        return f"EmbedderAdapter({self.name!r}, dim={self.dim})"
