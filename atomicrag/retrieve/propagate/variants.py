"""The other propagators of Table 11 (Katz, label propagation, weighted BFS) and the dense ranking.

All of them work on query blocks in the ``[N, b]`` layout (a column per query), like PPR, so the
memory of the iterate stays bounded whatever the number of queries.
"""
from __future__ import annotations

from typing import Any

import torch

from atomicrag.retrieve.propagate.base import (
    GraphCache,
    SeedTriplets,
    block_width,
    resolve_device,
    seed_triplets,
)


class _Blocked:
    """Shared driver: prepare the graph, split queries into blocks, transpose results back."""

    def __init__(self, device: str = "auto", block_size: int | None = None) -> None:
        self.device = resolve_device(device)
        self.block_size = block_size
        self._cache = GraphCache()

    def __call__(self, adj: torch.Tensor, seeds: torch.Tensor, **_: Any) -> torch.Tensor:
        prep = self._cache.get(adj, self.device)
        trip = seed_triplets(seeds.to(prep.device), prep.num_nodes)
        q, n = trip.num_queries, prep.num_nodes
        out = torch.zeros(q, n, device=prep.device)  # [Q, N]
        width = self.block_size or block_width(n, q, prep.device, buffers=3, budget_bytes=0.5e9)
        for q0 in range(0, q, width):
            q1 = min(q, q0 + width)
            out[q0:q1].copy_(self._block(prep, trip.block(q0, q1)).T)  # [N, b] -> [b, N]
        return out

    def _block(self, prep: Any, s: SeedTriplets) -> torch.Tensor:  # -> [N, b]
        raise NotImplementedError


class Katz(_Blocked):
    """Personalised Katz: ``sum_{t=1..T} beta^t (P^T)^t s`` with ``P = D^-1 A`` row-normalised.

    Normalising A makes its spectral radius 1, so any ``beta < 1`` converges (the raw-weight
    form would need ``beta < 1 / lambda_max(A)``, which depends on the graph).
    """

    def __init__(self, beta: float, max_iter: int = 20, **kw: Any) -> None:
        super().__init__(**kw)
        if not 0.0 < beta < 1.0:
            raise ValueError(f"katz beta must lie in (0, 1) for the row-normalised matrix, got {beta}")
        self.beta, self.max_iter = float(beta), int(max_iter)

    def _block(self, prep: Any, s: SeedTriplets) -> torch.Tensor:
        key = ("katz_op", self.beta)
        if key not in prep.extra:
            prep.require_symmetric("Katz")
            prep.extra[key] = prep.transition_t(self.beta)  # [N, N] CSR: beta * A D^-1
        m = prep.extra[key]
        x = s.dense(transposed=True)  # [N, b]
        nxt, acc = torch.empty_like(x), torch.zeros_like(x)  # ping-pong buffers, allocated once
        for _ in range(self.max_iter):
            torch.addmm(nxt, m, x, beta=0.0, out=nxt)  # [N, N] @ [N, b] -> [N, b]: one more hop and beta
            acc += nxt
            x, nxt = nxt, x
        return acc


class LabelPropagation(_Blocked):
    """``Y <- D^-1 A Y`` (every node takes the weighted mean of its neighbours), seeds clamped.

    The seeded entries are re-imposed after every step (Zhu & Ghahramani's hard clamping), so
    seed labels act as fixed boundary values and the rest converges to their harmonic extension.
    """

    def __init__(self, max_iter: int = 20, **kw: Any) -> None:
        super().__init__(**kw)
        self.max_iter = int(max_iter)

    def _block(self, prep: Any, s: SeedTriplets) -> torch.Tensor:
        if "labelprop_op" not in prep.extra:
            prep.extra["labelprop_op"] = prep.transition(1.0)  # [N, N] CSR: D^-1 A
        p = prep.extra["labelprop_op"]
        y = s.dense(transposed=True)  # [N, b]
        nxt = torch.empty_like(y)  # ping-pong buffer, allocated once
        flat_idx = s.node * s.num_queries + s.query  # positions of the seeds in y.view(-1)
        vals = s.value.to(y.dtype)
        for _ in range(self.max_iter):
            torch.addmm(nxt, p, y, beta=0.0, out=nxt)  # [N, N] @ [N, b] -> [N, b]
            nxt.view(-1)[flat_idx] = vals  # clamp the seeds
            y, nxt = nxt, y
        return y


class WeightedBFS(_Blocked):
    """Best path score within ``max_hops``: ``seed weight * prod(edge weights) * decay^hops``.

    Max-product over walks: hop h keeps, per (node, query), the best score of walks of exactly h
    edges; the result is the maximum over h = 0..max_hops. Each hop is a "max-SpMM" restricted to
    the rows reached so far, computed as a gather over their edges and a ``scatter_reduce(amax)``.
    ``weights="raw"`` uses the adjacency weights, ``"normalized"`` the transition probabilities.
    """

    def __init__(self, decay: float = 0.5, max_hops: int = 3, weights: str = "raw",
                 edge_chunk: int = 1 << 24, **kw: Any) -> None:
        super().__init__(**kw)
        if weights not in ("raw", "normalized"):
            raise ValueError("bfs weights must be 'raw' or 'normalized'")
        self.decay, self.max_hops, self.weights, self.edge_chunk = float(decay), int(max_hops), weights, edge_chunk

    def _block(self, prep: Any, s: SeedTriplets) -> torch.Tensor:
        b = s.num_queries
        w_all = prep.val if self.weights == "raw" else (prep.val * prep.inv_deg[prep.row]).float()  # [nnz]
        w_all = w_all * self.decay
        best = s.dense(transposed=True)  # [N, b], hop 0 = the seeds themselves
        frontier = best.clone()
        for _ in range(self.max_hops):
            active = (frontier > 0).any(1).nonzero().squeeze(1)  # rows reached at the last hop
            if active.numel() == 0:
                break
            nxt = torch.zeros_like(frontier)  # [N, b]
            counts = prep.crow[active + 1] - prep.crow[active]  # [R] edges per active row
            # chunk the edge list so that the gathered [E, b] candidates stay bounded
            cum = torch.cumsum(counts, 0)
            per = max(1, self.edge_chunk // max(b, 1))
            lo = 0
            while lo < active.numel():
                base = int(cum[lo - 1]) if lo else 0
                hi = int(torch.searchsorted(cum, torch.tensor(base + per, device=cum.device), right=True))
                hi = max(hi, lo + 1)
                rows, cnt = active[lo:hi], counts[lo:hi]
                start = prep.crow[rows]
                offs = torch.arange(int(cnt.sum()), device=cnt.device) - torch.repeat_interleave(
                    torch.cumsum(cnt, 0) - cnt, cnt)
                e = torch.repeat_interleave(start, cnt) + offs  # [E] entry ids of these rows
                u = torch.repeat_interleave(rows, cnt)  # [E] source rows
                cand = frontier[u] * w_all[e].unsqueeze(1)  # [E, b] * [E, 1] -> [E, b]
                nxt.scatter_reduce_(0, prep.col[e].unsqueeze(1).expand(-1, b), cand, reduce="amax")  # -> [N, b]
                lo = hi
            frontier = nxt
            torch.maximum(best, frontier, out=best)
        return best


class DenseSimilarity:
    """Atoms ranked by embedding similarity alone (the paper's "w/o ERGR" ablation).

    scores[:, E:] = query_embeddings @ atom_embeddings.T; entity columns are 0. The adjacency and
    seeds only fix the output shape. ``ann_k`` (``retriever.vector_index="faiss"``): only the
    ``ann_k`` atoms an HNSW search returns get their cosine; every other atom scores -2 (below
    any cosine), so the ranking is the approximate search's.
    """

    def __init__(self, device: str = "auto", ann_k: int | None = None) -> None:
        self.device = resolve_device(device)
        self.ann_k = ann_k

    def __call__(
        self,
        adj: torch.Tensor,
        seeds: torch.Tensor,
        *,
        atom_embeddings: torch.Tensor,
        query_embeddings: torch.Tensor,
        num_entities: int,
        **_: Any,
    ) -> torch.Tensor:
        dev = self.device or atom_embeddings.device
        n = adj.shape[0]
        a = atom_embeddings.to(dev, torch.float32)  # [A, d]
        q = query_embeddings.to(dev, torch.float32)  # [Q, d]
        if num_entities + a.shape[0] != n:
            raise ValueError(f"{num_entities} entities + {a.shape[0]} atoms != {n} nodes")
        out = torch.zeros(q.shape[0], n, device=dev)  # [Q, N]
        if self.ann_k is None:
            out[:, num_entities:] = q @ a.T  # [Q, d] @ [d, A] -> [Q, A]
            return out
        from atomicrag.retrieve.ann import ann_topk

        vals, ids = ann_topk(atom_embeddings, query_embeddings, self.ann_k)  # [Q, k] each
        atoms = torch.full((q.shape[0], a.shape[0]), -2.0, device=dev)  # [Q, A]
        found = torch.isfinite(vals).to(dev)
        vals = torch.where(found, vals.to(dev), torch.full_like(vals.to(dev), -2.0))
        atoms.scatter_reduce_(1, ids.to(dev), vals, reduce="amax")  # amax: a padded slot (id 0) can't erase
        out[:, num_entities:] = atoms
        return out
