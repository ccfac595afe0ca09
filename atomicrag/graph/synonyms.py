"""Synonym edges: exact KNN over entity embeddings by blocked matrix products.

Only entities with at least ``synonym_min_alnum`` alphanumeric characters take part (the
released code skips short strings such as "us" or "1"). For each such entity the top
``synonym_max_neighbors`` others by cosine are kept when cosine >= ``synonym_threshold``;
the undirected edge set is the union over both ends, weight = cosine.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from atomicrag.graph.incremental import (  # noqa: F401  (re-exported)
    _MAX_BLOCK_ELEMENTS,
    resolve_device,
    rows_to_edges,
    update_synonym_rows,
)
from atomicrag.graph.structure import EdgeList


@dataclass(frozen=True)
class _Knn:
    """The ``GraphConfig`` fields the KNN reads (``incremental.SynonymSettings``), without the
    config: this module imports with torch alone, as the GPU check needs."""

    synonym_threshold: float
    synonym_max_neighbors: int
    synonym_min_alnum: int
    synonym_batch: int
    device: str


def synonym_edges(entity_keys: list[str], embeddings: torch.Tensor, *, threshold: float, max_neighbors: int,
                  min_alnum: int, batch: int, device: str = "auto", candidates: str = "both_ends") -> EdgeList:
    """Synonym EdgeList over entity node ids (``embeddings`` is [E, d], any norm).

    The full KNN is the incremental row update from nothing (``incremental.update_synonym_rows``
    with every row recomputed): one code path for builds and updates.
    """
    cfg = _Knn(synonym_threshold=threshold, synonym_max_neighbors=max_neighbors,
               synonym_min_alnum=min_alnum, synonym_batch=batch, device=device)
    n = len(entity_keys)
    rows, _ = update_synonym_rows(None, torch.zeros(0, dtype=torch.int64), list(entity_keys), embeddings,
                                  torch.ones(n, dtype=torch.bool), cfg, candidates)
    return rows_to_edges(rows, n)
