"""Top-k atoms of a propagation result, and a memory-bounded propagate-then-top-k driver."""
from __future__ import annotations

from typing import Any

import torch

from atomicrag.retrieve.propagate.base import Propagator


def topk_atoms(scores: torch.Tensor, num_entities: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Best ``k`` atoms per query: ``(scores [Q, k], atom_idx [Q, k])``, best first.

    ``scores`` is ``[Q, N]`` in node order (entities first), so atom ``i`` is column
    ``num_entities + i``; the returned indices are atom indices (0-based). ``k`` is capped at the
    number of atoms.
    """
    atoms = scores[:, num_entities:]  # [Q, A]
    k = max(0, min(int(k), atoms.shape[1]))
    vals, idx = torch.topk(atoms, k, dim=1, largest=True, sorted=True)  # [Q, k], [Q, k]
    return vals, idx


def propagate_topk(
    propagator: Propagator,
    adj: torch.Tensor,
    seeds: torch.Tensor,
    num_entities: int,
    k: int,
    query_batch: int = 1024,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Propagate ``query_batch`` queries at a time and keep only their top-k atoms.

    Bounds memory to one ``[query_batch, N]`` score matrix; returns CPU tensors ``[Q, k]``.
    Keyword inputs that are per query (``query_embeddings``) are sliced with the batch.
    """
    if seeds.layout == torch.sparse_csr:
        seeds = seeds.to_sparse_coo()
    vals, idx = [], []
    for q0 in range(0, seeds.shape[0], query_batch):
        q1 = min(seeds.shape[0], q0 + query_batch)
        kw = {key: (v[q0:q1] if key == "query_embeddings" else v) for key, v in kwargs.items()}
        rows = torch.arange(q0, q1, device=seeds.device)
        part = seeds.index_select(0, rows) if seeds.layout == torch.sparse_coo else seeds[q0:q1]  # [b, N]
        fused = getattr(propagator, "topk", None)
        if callable(fused) and not kw:  # PPR: top-k straight from its [N, b] blocks
            v, i = fused(adj, part, num_entities, k)
        else:
            v, i = topk_atoms(propagator(adj, part, num_entities=num_entities, **kw), num_entities, k)
        vals.append(v.cpu())
        idx.append(i.cpu())
    if not vals:
        return torch.zeros(0, 0), torch.zeros(0, 0, dtype=torch.int64)
    return torch.cat(vals), torch.cat(idx)
