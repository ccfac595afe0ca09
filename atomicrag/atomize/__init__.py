"""Atomizers: chunks -> knowledge atoms (+ triples). Registry keys: llm, sentence, vocabulary, chunk.

``build_atomizer(cfg, llm=...)`` returns the atomizer named by ``cfg.name``; every atomizer has
``atomize(chunks) -> AtomizeResult``.
"""
from __future__ import annotations

from typing import Any

from atomicrag.core.config import AtomizerConfig


def atomizer_fidelity(fidelity: Any) -> dict[str, Any]:
    """How an LLM atomizer asks and reads (fidelity.extraction_replies, fidelity.budgets): deps of
    ``build_atomizer``."""
    return {"extraction_replies": fidelity.extraction_replies, "uncapped": fidelity.budgets == "released"}


def build_atomizer(cfg: AtomizerConfig, llm: Any = None, **deps: Any) -> Any:
    """Instantiate the registered atomizer ``cfg.name`` (deps: checkpoint_path, progress, ...)."""
    from atomicrag.core.registry import ATOMIZERS

    return ATOMIZERS.build(cfg.name, cfg=cfg, llm=llm, **deps)


__all__ = ["atomizer_fidelity", "build_atomizer"]
