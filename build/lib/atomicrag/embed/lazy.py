"""An embedder that loads its model on the first ``encode``.

A saved index records its embedder's ``name`` and ``dim``; opening it to list documents, read
statistics or delete documents needs neither a model nor seconds of loading. ``LazyEmbedder``
answers ``name``/``dim`` from the index and builds the real encoder only when texts must be
embedded (a query, an insert). At that point it checks the model is the one the index was
built with: another dimension is an error, another name a warning (same width, but vectors of
different models do not compare).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("atomicrag")


class LazyEmbedder:
    def __init__(self, build: Callable[[], Any], name: str, dim: int) -> None:
        self._build = build
        self.name = name
        self.dim = int(dim)
        self._model: Any = None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def model(self) -> Any:
        """The real encoder (built and checked on first use)."""
        if self._model is None:
            model = self._build()
            if model.dim != self.dim:
                raise ValueError(f"embedder {model.name!r} has dim={model.dim}, but the index was built with "
                                 f"{self.name!r} (dim={self.dim}); load it with that embedder")
            if model.name != self.name:
                log.warning("loading an index built with embedder %r using %r: same dimension, but vectors from "
                            "different models do not compare", self.name, model.name)
            self._model = model
        return self._model

    def encode(self, texts: list[str], *, is_query: bool = False) -> Any:
        return self.model().encode(texts, is_query=is_query)

    def __repr__(self) -> str:
        return f"LazyEmbedder({self.name!r}, dim={self.dim}, loaded={self.loaded})"


def lazy_saved_embedder(cfg: Any, saved: dict[str, Any]) -> LazyEmbedder | None:
    """The config's embedder for a saved index whose ``{"name", "dim"}`` are known, else None."""
    if not saved.get("name") or saved.get("dim") is None:
        return None

    def build() -> Any:
        from atomicrag.embed.factory import build_embedder

        return build_embedder(cfg.embedder, cfg.fidelity)

    return LazyEmbedder(build, str(saved["name"]), int(saved["dim"]))
