"""Text encoders (fake, sentence-transformers, transformers, ONNX Runtime), vector indexes and the embedding cache.

Heavy libraries (torch, sentence-transformers, transformers, faiss) load only when an embedder or an
index of that kind is built: the names below load on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "embed_cached": ".cache", "build_embedder": ".factory", "FakeEmbedder": ".fake", "Embedder": ".protocol",
    "FaissIndex": ".vector_index", "TorchExactIndex": ".vector_index", "VectorIndex": ".vector_index",
    "build_index": ".vector_index",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module 'atomicrag.embed' has no attribute {name!r}")
