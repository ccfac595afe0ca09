"""Atomizers: chunks -> knowledge atoms (+ triples). Registry keys: llm, sentence, vocabulary, chunk.

``build_atomizer(cfg, llm=...)`` returns the atomizer named by ``cfg.name``; every atomizer has
``atomize(chunks) -> AtomizeResult``.
"""
from __future__ import annotations

from typing import Any

from atomicrag.core.config import AtomizerConfig


def build_atomizer(cfg: AtomizerConfig, llm: Any = None, **deps: Any) -> Any:
    """Instantiate the registered atomizer ``cfg.name`` (deps: checkpoint_path, progress, ...)."""
    from atomicrag.core.registry import ATOMIZERS

    return ATOMIZERS.build(cfg.name, cfg=cfg, llm=llm, **deps)


__all__ = ["build_atomizer"]
