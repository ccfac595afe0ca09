"""The Atom-Entity Graph: construction, statistics, artifacts.

Public API (imported lazily, so ``import atomicrag.graph`` stays cheap):
``build_graph``, ``index_corpus``, ``graph_stats``, ``save_graph``, ``load_graph``,
``AtomEntityGraph``, ``EdgeList``, ``canonical_key``.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "build_graph": ".build",
    "index_corpus": ".cached_build",
    "graph_stats": ".stats",
    "save_graph": ".io",
    "load_graph": ".io",
    "AtomEntityGraph": ".structure",
    "EdgeList": ".structure",
    "canonical_key": ".canon",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'atomicrag.graph' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)


__all__ = list(_EXPORTS)
