"""The one index/query engine shared by the research harness and the library (``engine.Engine``;
a corpus's index is ``corpus_index.CorpusIndex``).

Names load on first use, so importing the package stays cheap (no torch). What else the faces
use of the stages is named in :mod:`atomicrag.engine.api`.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Batch": ".engine", "ConfigModels": ".engine", "Engine": ".engine", "Models": ".engine",
    "CorpusIndex": ".corpus_index", "combined_stats": ".corpus_index",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'atomicrag.engine' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)


__all__ = list(_EXPORTS)
