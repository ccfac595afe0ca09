"""Random walks with restart by Monte-Carlo simulation, every walk of every query at once.

Each query starts ``num_walks`` walks at nodes drawn from its seed distribution. A walk moves to a
neighbour drawn in proportion to the edge weight; on a dangling node it jumps to a fresh seed draw
("seed", the released code) or to a uniform node ("uniform"). That is the Markov chain P' of the
exact solve (``ppr.py``), whose PPR vector is the series ``pi = sum_t c (1-c)^t s P'^t``.

The estimator is unbiased for that series. The position at step t of a walk is distributed as
``s P'^t``, so a visit at step t is counted with weight ``c (1-c)^t`` for t = 0..walk_length
(deterministic weights instead of random restarts: less variance than killing walks). The
remaining tail, ``(1-c)^(L+1)`` of the mass, is sampled by Russian roulette: surviving walks keep
moving, stop with probability c before each further step and count each visit with weight
``c (1-c)^L`` (a walk reaches step L+j with probability (1-c)^j); its expectation is exactly the
tail ``sum_{t>L} c (1-c)^t s P'^t``. Scores are the weighted visits divided by the number of walks
(not by their sum, which would make a biased ratio estimator): each row sums to 1 in expectation.
Counting the positions of walks that restart in place instead (step 0 included) would over-weight
the seeds at short walk lengths.

Weighted neighbour draws use the CSR row pointers and one global cumulative sum of the weights:
a draw in row u is ``searchsorted(cum, cum[start_u - 1] + U * rowsum_u)``, vectorised over all
walks. Seed draws use the same trick over the (query-sorted) seed triplets.
"""
from __future__ import annotations

from typing import Any

import torch

from atomicrag.retrieve.propagate.base import GraphCache, resolve_device, seed_triplets

_ROULETTE_CAP = 1000  # steps of the tail phase at most


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
        counts = torch.zeros(q * n, device=dev, dtype=torch.float64)  # [Q*N] weighted visits
        walkers_q = trip.has_seed.nonzero().squeeze(1).repeat_interleave(self.num_walks)  # [W] query of each walk
        per = max(1, self.max_walkers)
        for w0 in range(0, walkers_q.numel(), per):
            self._simulate(walkers_q[w0:w0 + per], prep, trip.node, seed_cum, seed_start, seed_end,
                           edge_cum, counts, gen)
        return (counts.view(q, n) / float(self.num_walks)).float()  # [Q, N]; zero-seed queries: zeros

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
        c = self.restart

        def from_seeds(qs: torch.Tensor) -> torch.Tensor:  # [w] query ids -> [w] start nodes
            return seed_node[_draw(seed_start[qs], seed_end[qs], seed_cum, gen)]

        def step(wq_: torch.Tensor, cur_: torch.Tensor) -> torch.Tensor:  # one move of P' per walk
            rs = prep.crow[cur_]  # [w] row start of the current node
            re = prep.crow[cur_ + 1]
            stuck = re == rs  # dangling node: no neighbour to move to
            nxt = cur_.clone()
            move = ~stuck
            if bool(move.any()):
                nxt[move] = prep.col[_draw(rs[move], re[move], edge_cum, gen)]
            if bool(stuck.any()):
                if self.dangling == "seed":
                    nxt[stuck] = from_seeds(wq_[stuck])
                else:
                    nxt[stuck] = torch.randint(0, n, (int(stuck.sum()),), generator=gen, device=wq_.device)
            return nxt

        cur = from_seeds(wq)  # [W]
        weight = c  # c (1-c)^t at step t
        counts.index_add_(0, wq * n + cur, torch.full(wq.shape, weight, dtype=counts.dtype, device=wq.device))
        for _ in range(self.walk_length):
            cur = step(wq, cur)
            weight *= 1.0 - c
            counts.index_add_(0, wq * n + cur, torch.full(wq.shape, weight, dtype=counts.dtype, device=wq.device))
        # Russian roulette for the tail: a walk goes on with probability 1-c, so it reaches step
        # L+j with probability (1-c)^j; a visit there carries c (1-c)^L, making its expected
        # weight c (1-c)^(L+j), the series term. The cap only guards against an endless loop.
        tail = c * (1.0 - c) ** self.walk_length
        alive_q, alive = wq, cur
        for _ in range(_ROULETTE_CAP):
            go = torch.rand(alive_q.shape, generator=gen, device=wq.device) >= c  # [w] survivors
            alive_q, alive = alive_q[go], alive[go]
            if alive_q.numel() == 0 or tail == 0.0:
                break
            alive = step(alive_q, alive)
            counts.index_add_(0, alive_q * n + alive,
                              torch.full(alive_q.shape, tail, dtype=counts.dtype, device=wq.device))
