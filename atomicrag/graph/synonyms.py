"""Synonym edges: exact KNN over entity embeddings by blocked matrix products.

Only entities with at least ``synonym_min_alnum`` alphanumeric characters take part (the
released code skips short strings such as "us" or "1"). For each such entity the top
``synonym_max_neighbors`` others by cosine are kept when cosine >= ``synonym_threshold``;
the undirected edge set is the union over both ends, weight = cosine.
"""
from __future__ import annotations

import torch

from .canon import alnum_count
from .structure import EdgeList

# Cap on the [rows, candidates] similarity block, in elements (256 MB of float32 on CPU),
# whatever synonym_batch says: the block is the only large temporary of the KNN.
_MAX_BLOCK_ELEMENTS = 64 * 1024 * 1024


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def synonym_edges(entity_keys: list[str], embeddings: torch.Tensor, *, threshold: float, max_neighbors: int,
                  min_alnum: int, batch: int, device: str = "auto") -> EdgeList:
    """Synonym EdgeList over entity node ids (``embeddings`` is [E, d], any norm)."""
    cand = torch.tensor([i for i, k in enumerate(entity_keys) if alnum_count(k) >= min_alnum], dtype=torch.int64)
    c = int(cand.numel())
    if c < 2:
        return EdgeList.empty()
    dev = resolve_device(device)
    x = torch.nn.functional.normalize(embeddings[cand].to(dev, torch.float32), dim=1)  # [C, d]
    k = min(max_neighbors, c - 1)
    rows = max(1, min(batch, _MAX_BLOCK_ELEMENTS // c))
    src_parts, dst_parts, w_parts = [], [], []
    for start in range(0, c, rows):
        end = min(c, start + rows)
        sim = x[start:end] @ x.T  # [b, C] cosine of the block's entities to all candidates
        local = torch.arange(end - start, device=dev)
        sim[local, local + start] = -2.0  # no self loops
        vals, idx = torch.topk(sim, k, dim=1)  # [b, k]
        keep = vals >= threshold
        r = (local + start).unsqueeze(1).expand_as(idx)[keep]
        src_parts.append(r.cpu())
        dst_parts.append(idx[keep].cpu())
        w_parts.append(vals[keep].float().cpu())
    src = torch.cat(src_parts)
    dst = torch.cat(dst_parts)
    w = torch.cat(w_parts)
    if src.numel() == 0:
        return EdgeList.empty()
    # Map back to entity node ids and merge (a, b) with (b, a); keep the larger cosine of the
    # two directions (they differ only by rounding).
    a, b = cand[src], cand[dst]
    lo, hi = torch.minimum(a, b), torch.maximum(a, b)
    n = len(entity_keys)
    key = lo * n + hi
    uniq, inv = torch.unique(key, return_inverse=True)
    weight = torch.full((uniq.numel(),), -2.0, dtype=torch.float32).scatter_reduce(0, inv, w, reduce="amax")
    return EdgeList(uniq // n, uniq % n, weight)
