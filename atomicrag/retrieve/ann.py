"""Approximate top-k atoms by a FAISS HNSW index: ``retriever.vector_index="faiss"`` (switch #11).

The paper says retrieval uses "an approximate nearest neighbour index"; the released code
computes every dot product (``exact``, the torch matmul used everywhere else). Under ``faiss``
the dense top-k of a query — the atom seeds of ``atom_seeding="topk"`` and the ranking of
``retriever=dense`` — comes from an HNSW graph over the atom embeddings instead, so an atom the
HNSW search misses is neither seeded nor ranked. ``all_minmax`` seeding needs every atom's
similarity and therefore stays exact.

One index per atom-embedding tensor is kept (the last one used), built on first use.
"""
from __future__ import annotations

import torch

from atomicrag.embed.vector_index import build_index

# HNSW parameters: faiss defaults for M, a search breadth that keeps recall high on 10^4-10^5 atoms
HNSW_M = 32
EF_SEARCH = 128
_cache: dict[str, object] = {}


def _index(atom_embeddings: torch.Tensor, ef_search: int) -> object:
    key = (atom_embeddings.data_ptr(), tuple(atom_embeddings.shape), ef_search)
    if _cache.get("key") != key:
        index = build_index("faiss", int(atom_embeddings.shape[1]), hnsw=True, hnsw_m=HNSW_M, ef_search=ef_search)
        index.add(atom_embeddings.detach().cpu().float())
        _cache.update(key=key, index=index, tensor=atom_embeddings)  # the tensor keeps data_ptr valid
    return _cache["index"]


def ann_topk(atom_embeddings: torch.Tensor, queries: torch.Tensor, k: int,
             ef_search: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(scores [Q, k'], atom ids [Q, k'])`` by HNSW inner product, k' = min(k, A), best first.

    Slots HNSW could not fill (id -1) get score -inf and id 0; callers mask them by score."""
    index = _index(atom_embeddings, EF_SEARCH if ef_search is None else ef_search)
    scores, ids = index.search(queries.detach().cpu().float(), k)  # type: ignore[attr-defined]
    missing = ids < 0
    return scores.masked_fill(missing, float("-inf")), ids.clamp_min(0)
