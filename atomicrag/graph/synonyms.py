"""Synonym edges: exact KNN over entity embeddings by blocked matrix products.

Only entities with at least ``synonym_min_alnum`` alphanumeric characters take part (the
released code skips short strings such as "us" or "1"). For each such entity the top
``synonym_max_neighbors`` others by cosine are kept when cosine >= ``synonym_threshold``;
the undirected edge set is the union over both ends, weight = cosine.

``direction="directed"`` reproduces the released code (``fidelity.synonym_direction``): there
only the *querying* entity must pass the length filter (a short entity can be a neighbour), and
each direction a -> b is its own entry of weight cosine in an undirected igraph graph, where
containment and relevance pairs are entered in both directions. A pair found from both ends
therefore weighs twice a one-way pair relative to the other edge types. In this graph's units
(each containment/relevance pair once) that is ``weight = (cos_ab [b in KNN(a)] + cos_ba [a in
KNN(b)]) / 2``: a mutual pair keeps its cosine, a one-way pair gets half of it.
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
                  min_alnum: int, batch: int, device: str = "auto", direction: str = "mutual") -> EdgeList:
    """Synonym EdgeList over entity node ids (``embeddings`` is [E, d], any norm)."""
    if direction not in ("mutual", "directed"):
        raise ValueError(f"synonym direction {direction!r} is not 'mutual' or 'directed'")
    cand = torch.tensor([i for i, k in enumerate(entity_keys) if alnum_count(k) >= min_alnum], dtype=torch.int64)
    # the neighbours searched: the same candidates, or (released code) every entity
    keys_idx = cand if direction == "mutual" else torch.arange(len(entity_keys), dtype=torch.int64)
    c, m = int(cand.numel()), int(keys_idx.numel())
    if c < 1 or m < 2:
        return EdgeList.empty()
    dev = resolve_device(device)
    x = torch.nn.functional.normalize(embeddings[cand].to(dev, torch.float32), dim=1)  # [C, d]
    y = x if direction == "mutual" else torch.nn.functional.normalize(
        embeddings[keys_idx].to(dev, torch.float32), dim=1)  # [M, d]
    k = min(max_neighbors, m - 1)
    rows = max(1, min(batch, _MAX_BLOCK_ELEMENTS // m))
    src_parts, dst_parts, w_parts = [], [], []
    for start in range(0, c, rows):
        end = min(c, start + rows)
        sim = x[start:end] @ y.T  # [b, M] cosine of the block's entities to all searched keys
        local = torch.arange(end - start, device=dev)
        self_col = local + start if direction == "mutual" else cand[start:end].to(dev)
        sim[local, self_col] = -2.0  # no self loops
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
    # Map back to entity node ids and merge (a, b) with (b, a).
    a, b = cand[src], keys_idx[dst]
    lo, hi = torch.minimum(a, b), torch.maximum(a, b)
    n = len(entity_keys)
    key = lo * n + hi
    uniq, inv = torch.unique(key, return_inverse=True)
    if direction == "mutual":  # keep the larger cosine of the two directions (they differ by rounding)
        weight = torch.full((uniq.numel(),), -2.0, dtype=torch.float32).scatter_reduce(0, inv, w, reduce="amax")
    else:  # each direction found adds half its cosine (see the module docstring)
        weight = torch.zeros(uniq.numel(), dtype=torch.float32).index_add_(0, inv, 0.5 * w)
    return EdgeList(uniq // n, uniq % n, weight)
