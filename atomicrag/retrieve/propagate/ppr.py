"""Personalised PageRank for a whole batch of queries.

Model (one column per query, ``c = 1 - restart`` the continuation probability):

    x = restart * s + c * P^T x + c * (d^T x) * v

with ``P = D^-1 A`` the row-normalised adjacency, ``s`` the query's seed distribution, ``d`` the
indicator of dangling (zero-degree) nodes and ``v`` where their mass goes: ``s`` ("seed", what
igraph's PRPACK does for personalised PageRank) or the uniform vector ("uniform").

How it is solved: with ``M = c * P^T`` (zero columns at dangling nodes) we solve the linear system
``(I - M) y = s`` for the whole batch, then fold the dangling term in exactly (a rank-one
correction, see ``_finish``). For a symmetric A, ``M`` is similar to ``c * D^-1/2 A D^-1/2``, so its
spectrum is real and lies in ``[-c, c]``. That is what lets a Chebyshev semi-iteration (Golub and
Varga) replace plain power (Jacobi) iteration: its error after m products falls like
``1 / T_m(1/c)`` instead of ``c^m``. For c = 0.7 it needs 9 products where power iteration needs 20
for the same error bound; both cost one SpMM and one in-place ``addmm`` per step.

CPU layout: the iterate is ``[N, b]`` for a block of b queries, sized so that the two ping-pong
buffers stay in the last-level cache; every step streams the matrix (int32 CSR) once per block.
On CUDA all queries form one block (cuSPARSE SpMM wants the widest dense operand).
"""
from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from .base import GraphCache, PreparedGraph, SeedTriplets, block_width, resolve_device, seed_triplets
from .order import locality_order

SOLVERS = ("chebyshev", "power")


def chebyshev_steps(c: float, power_steps: int) -> int:
    """Fewest Chebyshev steps whose error bound is at most that of ``power_steps`` power steps.

    After m SpMMs the power (Neumann) iterate's error is ``c^(m+1)`` of the solution's scale and the
    Chebyshev iterate's is ``1 / T_(m+1)(1/c)`` (``T`` the Chebyshev polynomial).
    """
    if c <= 0.0:
        return 0
    if c >= 1.0:
        return power_steps
    target = (power_steps + 1) * math.log(c)  # log of the power-iteration bound
    arg = math.acosh(1.0 / c)
    for m in range(power_steps + 1):
        # log(1 / T_k(1/c)) with T_k(x) = cosh(k acosh x), k = m + 1
        if -math.log(math.cosh((m + 1) * arg)) <= target:
            return m
    return power_steps


def chebyshev_weights(c: float, steps: int) -> list[float]:
    """Golub–Varga weights ``omega_2 .. omega_(steps+1)`` for a spectrum in ``[-c, c]``."""
    out: list[float] = []
    omega = 1.0
    for k in range(steps):
        omega = 1.0 / (1.0 - c * c / 2.0) if k == 0 else 1.0 / (1.0 - c * c * omega / 4.0)
        out.append(omega)
    return out


class PPR:
    """Personalised PageRank, all queries together.

    restart: probability of jumping back to the seeds at each step (``1 - igraph damping``).
    max_iter: power-iteration steps whose accuracy is wanted; the Chebyshev solver reaches the
        same error bound in fewer steps (``chebyshev_steps``); the power solver does exactly these.
    tol: stop a block when every query's L1 change is below tol (0 = fixed number of steps).
    dangling: "seed" | "uniform" (see the module docstring).
    block_size: queries per block (None = sized to the cache on CPU, all queries on CUDA).
    reorder: relabel nodes for locality before propagating (None = on CPU only).
    dtype: of the operator and iterate (float64 for the exact variant).
    parallel_blocks: on CPU, run query blocks on ``torch.get_num_threads()`` Python threads, each
        with single-threaded SpMM (torch's thread count is set to 1 for the duration of the call).
    """

    def __init__(
        self,
        restart: float,
        max_iter: int = 20,
        tol: float = 0.0,
        dangling: str = "seed",
        solver: str = "chebyshev",
        block_size: int | None = None,
        device: str = "auto",
        reorder: bool | None = None,
        dtype: str | torch.dtype = torch.float32,
        parallel_blocks: bool = False,
    ) -> None:
        if not 0.0 < restart <= 1.0:
            raise ValueError(f"restart probability must lie in (0, 1], got {restart}")
        if dangling not in ("seed", "uniform"):
            raise ValueError(f"dangling must be 'seed' or 'uniform', got {dangling!r}")
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
        self.restart = float(restart)
        self.c = 1.0 - self.restart
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self.dangling = dangling
        self.solver = solver
        self.block_size = block_size
        self.device = resolve_device(device)
        self.reorder = reorder
        self.dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        self.parallel_blocks = parallel_blocks
        self._cache = GraphCache()
        self.last_steps = 0  # SpMM steps done by the last call (largest over blocks)

    # -- operators -------------------------------------------------------------------------
    def _operator(self, prep: PreparedGraph) -> dict[str, Any]:
        """``M = c * P^T`` as int32 CSR in the propagation order, plus that order."""
        key = ("ppr_op", self.c, self._reorder_on(prep), self.dtype)
        if key not in prep.extra:
            m = prep.transition_t(self.c, self.dtype)  # [N, N] CSR, M[i, j] = c * A[i, j] / deg[j]
            perm = inv = None
            if self._reorder_on(prep):
                perm = locality_order(prep)  # [N]: position -> node
                inv = torch.empty_like(perm)
                inv[perm] = torch.arange(perm.numel(), device=perm.device)  # [N]: node -> position
                m = permute_csr(m, perm, inv)
            prep.extra[key] = {"M": m, "perm": perm, "inv": inv}
        return prep.extra[key]

    def _reorder_on(self, prep: PreparedGraph) -> bool:
        return prep.device.type == "cpu" if self.reorder is None else bool(self.reorder)

    def steps(self) -> list[float]:
        """Weights of the SpMM steps: all 1 for power iteration, Golub–Varga for Chebyshev."""
        if self.solver == "power":
            return [1.0] * self.max_iter
        return chebyshev_weights(self.c, chebyshev_steps(self.c, self.max_iter))

    def block_width(self, prep: PreparedGraph, num_queries: int) -> int:
        if self.block_size is not None:
            return max(1, min(self.block_size, num_queries))
        return block_width(prep.num_nodes, num_queries, prep.device)

    # -- propagation -----------------------------------------------------------------------
    def __call__(self, adj: torch.Tensor, seeds: torch.Tensor, **_: Any) -> torch.Tensor:
        prep = self._cache.get(adj, self.device)
        prep.require_symmetric("PPR")  # P^T = A D^-1 and Chebyshev's real spectrum both need it
        seeds = seeds.to(prep.device)
        trip = seed_triplets(seeds, prep.num_nodes)
        op = self._operator(prep)
        if op["inv"] is not None:
            trip.node = op["inv"][trip.node]  # seed nodes in propagation order
        q, n = trip.num_queries, prep.num_nodes
        out = torch.empty(q, n, device=prep.device, dtype=self.dtype)  # [Q, N]
        width = self.block_width(prep, q)
        y_u = self._uniform_solution(prep, op) if self.dangling == "uniform" and bool(prep.dangling.any()) else None
        d_mask = prep.dangling if op["perm"] is None else prep.dangling[op["perm"]]  # [N] in propagation order
        self.last_steps = 0
        blocks = [(q0, min(q, q0 + width)) for q0 in range(0, q, width)]
        local = threading.local()  # per-worker ping-pong buffers, reused across blocks

        def run(block: tuple[int, int]) -> None:
            q0, q1 = block
            blk = trip.block(q0, q1)
            bufs = getattr(local, "bufs", None)
            if bufs is None or bufs[0].shape[1] != q1 - q0:
                bufs = local.bufs = (self._empty(prep, n, q1 - q0), self._empty(prep, n, q1 - q0))
            y = self._solve(prep, op, blk, bufs)  # [N, b]
            x = self._finish(y, blk, d_mask, y_u)  # [N, b]
            if op["inv"] is not None:
                x = x.index_select(0, op["inv"])  # [N, b] back in node order: row v = x[inv[v]]
            out[q0:q1].copy_(x.T)  # [b, N]

        workers = self._workers(prep, len(blocks))
        if workers <= 1:
            for block in blocks:
                run(block)
            return out
        # one single-threaded SpMM per worker, on different blocks: no per-step thread barrier
        before = torch.get_num_threads()

        def run_single(block: tuple[int, int]) -> None:
            torch.set_num_threads(1)
            run(block)

        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(run_single, blocks))
        finally:
            torch.set_num_threads(before)
        return out

    def _workers(self, prep: PreparedGraph, num_blocks: int) -> int:
        if prep.device.type != "cpu" or not self.parallel_blocks:
            return 1
        return max(1, min(torch.get_num_threads(), num_blocks))

    def _empty(self, prep: PreparedGraph, n: int, b: int) -> torch.Tensor:
        return torch.empty(n, b, device=prep.device, dtype=self.dtype)

    def _solve(
        self, prep: PreparedGraph, op: dict[str, Any], s: SeedTriplets, buffers: tuple[torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        """``y ~= (I - M)^-1 S`` for one block; returns one of the two buffers ``[N, b]``."""
        y, y_prev = buffers
        y.zero_()
        s.add_to_columns(y)  # y_1 = s (the step from y_0 = 0 needs no product)
        steps = 0
        for k, omega in enumerate(self.steps()):
            # y_next = omega * (M y + s) + (1 - omega) * y_prev, written over y_prev in place
            if k == 0:
                # y = s is sparse (tens of seeds per query) and y_prev = y_0 = 0: scatter the seeds'
                # columns of M instead of a full SpMM
                y_prev.zero_()
                self._seed_product(prep, op, s, y_prev, omega)
            else:
                # [N, N] @ [N, b] -> [N, b]; omega == 1 (power iteration) ignores y_prev (beta = 0)
                torch.addmm(y_prev, op["M"], y, beta=1.0 - omega, alpha=omega, out=y_prev)
            s.add_to_columns(y_prev, omega)  # + omega * s, only at the seeded entries
            steps += 1
            done = self.tol > 0 and bool(((y_prev - y).abs().sum(0) * self.restart < self.tol).all())  # [b]
            y, y_prev = y_prev, y
            if done:
                break
        self.last_steps = max(self.last_steps, steps)
        return y

    def _seed_product(
        self, prep: PreparedGraph, op: dict[str, Any], s: SeedTriplets, out: torch.Tensor, scale: float
    ) -> None:
        """``out[N, b] += scale * M @ S`` for sparse S, by gathering the seeds' columns of M.

        Column j of ``M = c A D^-1`` is ``c * A[:, j] / deg[j]``, i.e. row j of the symmetric A: read it
        from the CSR row pointers. Work = sum of the seeds' degrees, not nnz(A) * b.
        """
        node = s.node if op["perm"] is None else op["perm"][s.node]  # original node ids [K]
        start = prep.crow[node]
        cnt = prep.crow[node + 1] - start  # [K] degree (stored entries) of every seed
        src = torch.repeat_interleave(torch.arange(node.numel(), device=node.device), cnt)  # [T] seed of entry
        first = torch.cumsum(cnt, 0) - cnt  # [K] offset of each seed's entries
        e = start[src] + torch.arange(int(cnt.sum()), device=node.device) - first[src]  # [T] CSR entry ids
        nbr = prep.col[e] if op["inv"] is None else op["inv"][prep.col[e]]  # [T] rows hit, propagation order
        w = (self.c * scale) * prep.val[e].double() * prep.inv_deg[node][src] * s.value[src]  # [T]
        out.view(-1).index_add_(0, nbr * s.num_queries + s.query[src], w.to(out.dtype))  # (row, query) of [N, b]

    def _uniform_solution(self, prep: PreparedGraph, op: dict[str, Any]) -> torch.Tensor:
        """``(I - M)^-1 u`` for the uniform vector u: one extra column shared by every query."""
        key = ("ppr_uniform", self.c, self.solver, self.max_iter, self.tol, op["perm"] is not None, self.dtype)
        if key not in prep.extra:
            n = prep.num_nodes
            u = SeedTriplets(
                torch.arange(n, device=prep.device), torch.zeros(n, dtype=torch.int64, device=prep.device),
                torch.full((n,), 1.0 / n, device=prep.device), 1, n, torch.ones(1, dtype=torch.bool),
            )
            bufs = (self._empty(prep, n, 1), self._empty(prep, n, 1))
            prep.extra[key] = self._solve(prep, op, u, bufs).clone()  # [N, 1]
        return prep.extra[key]

    def _finish(
        self, y: torch.Tensor, s: SeedTriplets, d_mask: torch.Tensor, y_u: torch.Tensor | None
    ) -> torch.Tensor:
        """Fold the dangling term in and normalise each column to a distribution.

        seed: the exact x is a multiple of y (x = (r + c m_d) y, m_d the dangling mass) and sums to 1,
        so x = y / sum(y). uniform: x = r y + c m_d y_u with m_d = r d^T y / (1 - c d^T y_u).
        Queries without seeds have y = 0 and stay 0 (no division by zero).
        """
        if y_u is not None:
            dy = y[d_mask].sum(0)  # [b]: d^T y
            du = y_u[d_mask].sum()  # scalar: d^T y_u
            m_d = self.restart * dy / (1.0 - self.c * du)  # [b]
            y.mul_(self.restart).add_(y_u * (self.c * m_d))  # [N, b] + [N, 1] * [b] -> [N, b]
        total = y.sum(0)  # [b]
        y.mul_(torch.where(total > 0, 1.0 / total.clamp_min(1e-30), torch.zeros_like(total)))  # [N, b] * [b]
        return y


def permute_csr(m: torch.Tensor, perm: torch.Tensor, inv: torch.Tensor) -> torch.Tensor:
    """``m[perm][:, perm]`` for a CSR matrix: row i of the result is row perm[i], columns relabelled."""
    crow, col, val = m.crow_indices().long(), m.col_indices().long(), m.values()
    n = m.shape[0]
    counts = (crow[1:] - crow[:-1])[perm]  # [N] entries of each new row
    new_crow = torch.zeros(n + 1, dtype=torch.int64, device=m.device)
    new_crow[1:] = torch.cumsum(counts, 0)
    # source position of every entry of the new matrix, rows in the new order
    starts = crow[:-1][perm]  # [N]
    offs = torch.arange(int(new_crow[-1]), device=m.device) - torch.repeat_interleave(new_crow[:-1], counts)
    src = torch.repeat_interleave(starts, counts) + offs  # [nnz]
    new_col = inv[col[src]]  # [nnz] relabelled columns
    new_row = torch.repeat_interleave(torch.arange(n, device=m.device), counts)
    order = torch.argsort(new_row * n + new_col)  # sort columns within each row
    return torch.sparse_csr_tensor(
        new_crow.to(m.crow_indices().dtype), new_col[order].to(m.col_indices().dtype), val[src][order], (n, n),
        device=m.device,
    )
