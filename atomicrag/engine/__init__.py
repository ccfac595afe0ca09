"""The one index/query engine shared by the research harness and the library (see ``core``).

Names load on first use, so ``atomicrag.engine.baselines`` (read by config validation) and
``atomicrag.engine.sampling`` import without torch.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Batch": ".core", "ConfigModels": ".core", "Engine": ".core", "Models": ".core",
    "CorpusIndex": ".index", "combined_stats": ".index",
    "needs_llm": ".needs", "stage_needs": ".needs",
    "sampling": ".sampling",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'atomicrag.engine' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)


__all__ = list(_EXPORTS)
