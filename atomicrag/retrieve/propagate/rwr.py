"""Random walks with restart by Monte-Carlo simulation, every walk of every query at once.

Each query starts ``num_walks`` walks at nodes drawn from its seed distribution. At every step a
walk restarts (jumps to a fresh draw from the seeds) with probability ``restart``, otherwise it
moves to a neighbour drawn in proportion to the edge weight. A walk on a dangling node restarts
("seed") or jumps to a uniform node ("uniform"). The score of a node is the fraction of all
visited positions (the start included) that sit on it: for long walks this time average is the
personalised PageRank vector (the walk with restart is a Markov chain whose stationary law is PPR).

Weighted neighbour draws use the CSR row pointers and one global cumulative sum of the weights:
a draw in row u is ``searchsorted(cum, cum[start_u - 1] + U * rowsum_u)``, vectorised over all
walks. Seed draws use the same trick over the (query-sorted) seed triplets.
"""
from __future__ import annotations

from typing import Any

import torch

from .base import GraphCache, resolve_device, seed_triplets


def _draw(starts: torch.Tensor, ends: torch.Tensor, cum: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One weighted draw per segment ``[starts[i], ends[i])`` of ``cum`` (inclusive cumulative weights).

    Returns positions into ``cum``; segments must be non-empty.
    """
    before = torch.where(starts > 0, cum[(starts - 1).clamp_min(0)], torch.zeros_like(cum[:1]))  # [W]
    total = cum[ends - 1] - before  # [W] segment weight
    u = torch.rand(starts.shape, generator=gen, device=cum.device, dtype=cum.dtype)
    pos = torch.searchsorted(cum, before + u * total, right=True)  # first cum > target
    return torch.minimum(torch.maximum(pos, starts), ends - 1)  # guard rounding at the edges


class RandomWalkRestart:
    def __init__(
        self,
        restart: float,
        num_walks: int = 1000,
        walk_length: int = 10,
        rng_seed: int = 0,
        dangling: str = "seed",
        device: str = "auto",
        max_walkers: int = 1 << 22,
    ) -> None:
        if not 0.0 <= restart <= 1.0:
            raise ValueError(f"restart must lie in [0, 1], got {restart}")
        if dangling not in ("seed", "uniform"):
            raise ValueError("dangling must be 'seed' or 'uniform'")
        self.restart, self.num_walks, self.walk_length = float(restart), int(num_walks), int(walk_length)
        self.rng_seed, self.dangling = int(rng_seed), dangling
        self.device = resolve_device(device)
        self.max_walkers = int(max_walkers)  # walks simulated together (memory bound)
        self._cache = GraphCache()

    def __call__(self, adj: torch.Tensor, seeds: torch.Tensor, **_: Any) -> torch.Tensor:
        prep = self._cache.get(adj, self.device)
        dev, n = prep.device, prep.num_nodes
        trip = seed_triplets(seeds.to(dev), n)
        q = trip.num_queries
        if "rwr_cum" not in prep.extra:
            prep.extra["rwr_cum"] = torch.cumsum(prep.val.double(), 0)  # [nnz] float64: rounding-safe
        edge_cum = prep.extra["rwr_cum"]
        seed_cum = torch.cumsum(trip.value.double(), 0)  # [K]
        seed_start = torch.searchsorted(trip.query, torch.arange(q, device=dev))  # [Q]
        seed_end = torch.searchsorted(trip.query, torch.arange(q, device=dev), right=True)  # [Q]
        gen = torch.Generator(device=dev)
        gen.manual_seed(self.rng_seed)
        counts = torch.zeros(q * n, device=dev)  # [Q*N] visit counts (exact in float32 below 2^24)
        walkers_q = trip.has_seed.nonzero().squeeze(1).repeat_interleave(self.num_walks)  # [W] query of each walk
        per = max(1, self.max_walkers)
        for w0 in range(0, walkers_q.numel(), per):
            self._simulate(walkers_q[w0:w0 + per], prep, trip.node, seed_cum, seed_start, seed_end,
                           edge_cum, counts, gen)
        counts = counts.view(q, n)  # [Q, N]
        total = counts.sum(1, keepdim=True)  # [Q, 1]
        return counts / total.clamp_min(1.0)  # zero-seed queries: no walks, all zeros

    def _simulate(
        self,
        wq: torch.Tensor,
        prep: Any,
        seed_node: torch.Tensor,
        seed_cum: torch.Tensor,
        seed_start: torch.Tensor,
        seed_end: torch.Tensor,
        edge_cum: torch.Tensor,
        counts: torch.Tensor,
        gen: torch.Generator,
    ) -> None:
        """Advance the walks of queries ``wq`` [W] and add their visits to ``counts`` [Q*N]."""
        n = prep.num_nodes
        ones = torch.ones(wq.shape, device=wq.device, dtype=counts.dtype)

        def from_seeds(qs: torch.Tensor) -> torch.Tensor:  # [w] query ids -> [w] start nodes
            return seed_node[_draw(seed_start[qs], seed_end[qs], seed_cum, gen)]

        cur = from_seeds(wq)  # [W]
        counts.index_add_(0, wq * n + cur, ones)
        for _ in range(self.walk_length):
            rs = prep.crow[cur]  # [W] row start of the current node
            re = prep.crow[cur + 1]
            jump = torch.rand(wq.shape, generator=gen, device=wq.device) < self.restart  # [W]
            stuck = re == rs  # dangling node: no neighbour to move to
            move = ~jump & ~stuck
            nxt = cur.clone()
            if bool(move.any()):
                nxt[move] = prep.col[_draw(rs[move], re[move], edge_cum, gen)]
            reset = jump | (stuck if self.dangling == "seed" else torch.zeros_like(stuck))
            if bool(reset.any()):
                nxt[reset] = from_seeds(wq[reset])
            if self.dangling == "uniform":
                teleport = stuck & ~jump
                if bool(teleport.any()):
                    nxt[teleport] = torch.randint(0, n, (int(teleport.sum()),), generator=gen, device=wq.device)
            cur = nxt
            counts.index_add_(0, wq * n + cur, ones)
