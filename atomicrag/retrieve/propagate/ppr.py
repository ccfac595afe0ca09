"""Personalised PageRank for a whole batch of queries.

Model (one column per query, ``c = 1 - restart`` the continuation probability):

    x = restart * s + c * P^T x + c * (d^T x) * v

with ``P = D^-1 A`` the row-normalised adjacency, ``s`` the query's seed distribution, ``d`` the
indicator of dangling (zero-degree) nodes and ``v`` where their mass goes: ``s`` ("seed", what
igraph's PRPACK does for personalised PageRank) or the uniform vector ("uniform").

With ``M = c * P^T`` (zero columns at dangling nodes) we solve ``(I - M) y = s`` for the whole batch,
then fold the dangling term in exactly (a rank-one correction, ``_finish``). Solvers (``solvers.py``):

- ``power``: ``y <- M y + s``, plain power iteration, exactly ``max_iter`` steps (or until ``tol``);
  the L1 error of ``restart * y`` after m steps is ``c^(m+1)``. The straight SpMM of HippoRAG-style
  code; Table 11's exact variant runs it in float64 to ``builders.EXACT_TOL``.
- ``chebyshev`` (default): Chebyshev semi-iteration. For a symmetric A, M is similar to
  ``c D^-1/2 A D^-1/2``, so its spectrum is real and in ``[-c, c]`` and the error falls like
  ``1 / T_m(1/c)`` instead of ``c^m``. Each step is the same single fused ``addmm``.
- ``cg``: conjugate gradients on the symmetric form (fewest steps, but 5 extra passes per step).

chebyshev and cg stop each query once a *guaranteed* bound on its L1 error (from the residual) is
at most that of ``max_iter`` power steps, so they are never less accurate than ``power``, in fewer
products. Converged queries are frozen, so a query's result does not depend on the batch it is in.
``topk()`` with ``stop="topk"`` (chebyshev) also stops a query once its top-k atom set is certified
exact by a residual bound (``certify.py``; checked from ``solvers.first_cert_check``, then every
``solvers.CERT_GAP`` steps); a stopped query's top-k is taken as it stops and its
column leaves the block, which is compacted, so the remaining products cost only what still runs.
The steps at which queries stop, and the time per query, are in the records that
docs/benchmarks.md lists ("Speed work"; ``results/benchmarks/speed_ppr_certified.txt``).

CPU layout: the iterate is ``[N, b]``, b queries wide (``base.block_width``, bounded by memory):
each stored matrix entry then reads a contiguous row of the iterate, which is what makes the
memory-bound SpMM efficient; nodes are relabelled by reverse Cuthill–McKee so that neighbouring
rows share cache lines; the first product of every solve scatters the (sparse) seeds' matrix
columns instead of a full SpMM; buffers are allocated once per call, never per step (a fresh
[N, b] tensor costs page faults on first touch). On CUDA all queries form one block.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from atomicrag.retrieve.propagate.base import (
    GraphCache,
    PreparedGraph,
    SeedTriplets,
    block_width,
    resolve_device,
    seed_triplets,
)
from atomicrag.retrieve.propagate.certify import TopkCertificate, make_certificate
from atomicrag.retrieve.propagate.order import locality_order
from atomicrag.retrieve.propagate.solvers import SolveParams, solve_cg, solve_chebyshev, solve_power

SOLVERS = {"chebyshev": solve_chebyshev, "cg": solve_cg, "power": solve_power}
MIN_CERT_WIDTH = 128  # blocks this wide (or of one query) use the top-k certificate


class PPR:
    """Personalised PageRank, all queries together.

    restart: probability of jumping back to the seeds at each step (``1 - igraph damping``).
    max_iter: power steps whose accuracy is wanted (power: exactly these; chebyshev/cg: at most
        these, stopping once the guaranteed L1 error is at most that of ``max_iter`` power steps).
    tol: power: stop a block once every query's L1 change is below tol; chebyshev/cg: stop a query
        once its L1 error bound is below tol (0 = as described for max_iter).
    dangling: "seed" | "uniform" (see the module docstring).
    solver: "chebyshev" | "cg" | "power".
    block_size: queries per block (None = as many as 3 GB of buffers allow, at most 1024).
    reorder: relabel nodes for locality before propagating (None = on CPU only).
    dtype: of the operator and iterate (float64 for the exact variant).
    stop: "topk" (chebyshev): in ``topk()`` a query also stops once its top-k atom set is certified
        exact (``certify.py``), usually several steps before the accuracy bound; "accuracy": only the
        accuracy bound. ``__call__`` (full scores) always uses the accuracy bound.
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
        stop: str = "topk",
    ) -> None:
        if not 0.0 < restart <= 1.0:
            raise ValueError(f"restart probability must lie in (0, 1], got {restart}")
        if dangling not in ("seed", "uniform"):
            raise ValueError(f"dangling must be 'seed' or 'uniform', got {dangling!r}")
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
        if stop not in ("topk", "accuracy"):
            raise ValueError(f"stop must be 'topk' or 'accuracy', got {stop!r}")
        self.stop = stop
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
        self._cache = GraphCache()
        self._flat: list[torch.Tensor] | None = None
        self.last_steps = 0  # SpMM steps done by the last call (largest over blocks)
        self.last_query_steps: torch.Tensor | None = None  # [Q] chebyshev: step at which each query stopped

    # -- operators -------------------------------------------------------------------------
    def _operator(self, prep: PreparedGraph) -> dict[str, Any]:
        """The solver's matrix as int32 CSR in the propagation order, plus that order.

        power, chebyshev: ``M = c A D^-1``. cg: ``S = D^-1/2 A D^-1/2``; ``dh = sqrt(deg)`` (1 where dangling).
        """
        reorder = prep.device.type == "cpu" if self.reorder is None else bool(self.reorder)
        key = ("ppr_op", self.solver, self.c, reorder, self.dtype)
        if key not in prep.extra:
            dh = torch.where(prep.dangling, torch.ones_like(prep.deg), prep.deg.sqrt())  # [N] float64
            if self.solver != "cg":
                w = self.c * prep.val.double() * prep.inv_deg[prep.col]  # M[i, j] = c A[i, j] / deg[j]
            else:
                w = prep.val.double() / (dh[prep.row] * dh[prep.col])  # S[i, j] = A[i, j] / sqrt(d_i d_j)
            m = prep.csr(w.to(self.dtype))  # [N, N]
            perm = inv = None
            if reorder:
                perm = locality_order(prep)  # [N]: position -> node
                inv = torch.empty_like(perm)
                inv[perm] = torch.arange(perm.numel(), device=perm.device)  # [N]: node -> position
                m = permute_csr(m, perm, inv)
                dh = dh[perm]
            prep.extra[key] = {"M": m, "perm": perm, "inv": inv, "dh": dh.to(self.dtype)}
        return prep.extra[key]

    def block_width(self, prep: PreparedGraph, num_queries: int) -> int:
        if self.block_size is not None:
            return max(1, min(self.block_size, num_queries))
        bufs = 5 if self.solver == "cg" else (6 if self.stop == "topk" else 4)  # + the certificate's two
        itemsize = torch.empty((), dtype=self.dtype).element_size()  # 8 for the float64 exact solve
        return block_width(prep.num_nodes, num_queries, prep.device, buffers=bufs, itemsize=itemsize)

    # -- propagation -----------------------------------------------------------------------
    def __call__(self, adj: torch.Tensor, seeds: torch.Tensor, **_: Any) -> torch.Tensor:
        """Scores ``[Q, N]`` (each row a distribution over the nodes, node order)."""
        out: torch.Tensor | None = None
        for q0, q1, x, inv, _bufs, _cert in self._blocks(adj, seeds):
            if out is None:
                out = torch.empty(seeds.shape[0], x.shape[0], device=x.device, dtype=self.dtype)  # [Q, N]
            if inv is not None:  # back in node order: row v = x[inv[v]], into a free buffer
                x = torch.index_select(x, 0, inv, out=_spare(_bufs, x))
            _transpose_into(out[q0:q1], x)  # [N, b] -> [b, N]
        if out is None:
            out = torch.zeros(seeds.shape[0], seeds.shape[1], dtype=self.dtype)
        return out

    def topk(self, adj: torch.Tensor, seeds: torch.Tensor, num_entities: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scores [Q, k], atom_idx [Q, k])``, the same as ``topk_atoms(self(adj, seeds), ...)``
        without materialising the ``[Q, N]`` scores (saves its page faults and transpose)."""
        vals, idx = [], []
        for _q0, _q1, x, inv, bufs, cert in self._blocks(adj, seeds, (num_entities, k)):
            n, b = x.shape
            a = n - num_entities
            kk = max(0, min(k, a))
            if b:
                pos = (inv[num_entities:] if inv is not None
                       else torch.arange(num_entities, n, device=x.device))  # [A] atom rows in x
                spare = _spare(bufs, x)
                xa = torch.index_select(x, 0, pos, out=spare.view(-1)[: a * b].view(a, b))  # [A, b]
                xt = next(buf for buf in bufs if buf.data_ptr() not in (x.data_ptr(), spare.data_ptr()))
                xt = xt.view(-1)[: a * b].view(b, a)
                _transpose_into(xt, xa)  # [b, A]
                v, i = torch.topk(xt, kk, dim=1)  # [b, k]
            else:
                v, i = x.new_zeros(0, kk), torch.zeros(0, kk, dtype=torch.int64, device=x.device)
            if cert is not None:  # certified queries were ranked as they stopped; x holds the rest
                cert.out_vals[cert.rest_cols] = v
                cert.out_idx[cert.rest_cols] = i
                v, i = cert.out_vals, cert.out_idx
            vals.append(v)
            idx.append(i)
        if not vals:
            return torch.zeros(seeds.shape[0], 0), torch.zeros(seeds.shape[0], 0, dtype=torch.int64)
        return torch.cat(vals), torch.cat(idx)

    def _blocks(self, adj: torch.Tensor, seeds: torch.Tensor, topk: tuple[int, int] | None = None,
                ) -> Iterator[tuple[int, int, torch.Tensor, Any, list, TopkCertificate | None]]:
        """Solve block by block; yield ``(q0, q1, x [N, b] in propagation order, inv, buffers, cert)``.

        ``topk = (num_entities, k)``: the caller keeps only the top-k atoms, so (stop="topk") a
        query may stop once that set is certified. Where a certificate ran (``cert`` not None),
        the certified queries' top-k are already in ``cert.out_*`` and ``x`` holds only the
        columns ``cert.rest_cols`` of the block.
        """
        prep = self._cache.get(adj, self.device)
        prep.require_symmetric("PPR")  # P^T = A D^-1 and the symmetric form both need it
        trip = seed_triplets(seeds.to(prep.device), prep.num_nodes)
        op = self._operator(prep)
        if op["inv"] is not None:
            trip.node = op["inv"][trip.node]  # seed nodes in propagation order
        q, n = trip.num_queries, prep.num_nodes
        width = self.block_width(prep, q)
        y_u = self._uniform_solution(prep, op) if self.dangling == "uniform" and bool(prep.dangling.any()) else None
        d_mask = prep.dangling if op["perm"] is None else prep.dangling[op["perm"]]  # [N] in propagation order
        self.last_steps = 0
        self.last_query_steps = torch.full((q,), self.max_iter, dtype=torch.int64)
        # certifying a top-k set needs the dangling mass to go to the seeds (x* a multiple of y*)
        certify = (topk is not None and self.stop == "topk" and self.solver == "chebyshev" and y_u is None)
        for q0 in range(0, q, width):
            q1 = min(q, q0 + width)
            bufs = self._buffers(prep, n, q1 - q0, extra=2 if certify else 0)
            # a certificate pays where the block is wide (stopped queries leave it, later products
            # narrow) or a single query (checks cost as little as a product); for blocks of 2-127
            # the checks cost more than the steps they save (Medical scale, blocks of 32: the
            # "medium" lines of results/benchmarks/speed_ppr_certified.txt)
            worth = certify and (q1 - q0 == 1 or q1 - q0 >= MIN_CERT_WIDTH)
            cert = make_certificate(op, prep.deg, topk[0], topk[1], self.c, bufs[4:6]) if worth else None
            if cert is not None:
                cert.start(q1 - q0, prep.device, self.dtype)
            y = self._solve(prep, op, trip.block(q0, q1), bufs, cert, q0)  # [N, b]
            yield q0, q1, self._finish(y, d_mask, y_u), op["inv"], bufs, cert

    def _buffers(self, prep: PreparedGraph, n: int, b: int, extra: int = 0) -> list[torch.Tensor]:
        """Work buffers ``[N, b]``, kept between calls: a fresh tensor of this size costs page faults
        on first touch (about as much as one propagation step). ``release()`` frees them."""
        count = (5 if self.solver == "cg" else 4) + extra
        flat = self._flat
        if flat is None or flat[0].numel() < n * b or flat[0].device != prep.device or flat[0].dtype != self.dtype:
            self._flat = flat = [torch.empty(n * b, device=prep.device, dtype=self.dtype) for _ in range(count)]
        while len(flat) < count:  # the certificate's two buffers, added on first use
            flat.append(torch.empty(flat[0].numel(), device=prep.device, dtype=self.dtype))
        return [f[: n * b].view(n, b) for f in flat[:count]]

    def release(self) -> None:
        """Drop the cached work buffers and prepared graph."""
        self._flat = None
        self._cache = GraphCache()

    def _solve(self, prep: PreparedGraph, op: dict[str, Any], s: SeedTriplets, bufs: list[torch.Tensor],
               cert: TopkCertificate | None = None, q0: int | None = None) -> torch.Tensor:
        prm = SolveParams(self.c, self.max_iter, self.tol, self.dtype, cert)
        y, steps = SOLVERS[self.solver](prep, op, s, bufs, prm)
        self.last_steps = max(self.last_steps, steps)
        if q0 is not None and self.last_query_steps is not None:
            per = prm.query_steps.cpu() if prm.query_steps is not None else torch.full((s.num_queries,), steps)
            self.last_query_steps[q0: q0 + s.num_queries] = per
        return y

    def _uniform_solution(self, prep: PreparedGraph, op: dict[str, Any]) -> torch.Tensor:
        """``(I - M)^-1 u`` for the uniform vector u: one extra column shared by every query."""
        key = ("ppr_uniform", self.solver, self.c, self.max_iter, self.tol, op["perm"] is not None, self.dtype)
        if key not in prep.extra:
            n = prep.num_nodes
            u = SeedTriplets(
                torch.arange(n, device=prep.device), torch.zeros(n, dtype=torch.int64, device=prep.device),
                torch.full((n,), 1.0 / n, device=prep.device, dtype=torch.float64), 1, n,
                torch.ones(1, dtype=torch.bool, device=prep.device),
            )
            bufs = [torch.empty(n, 1, device=prep.device, dtype=self.dtype) for _ in range(5)]
            prep.extra[key] = self._solve(prep, op, u, bufs).clone()  # [N, 1]
        return prep.extra[key]

    def _finish(self, y: torch.Tensor, d_mask: torch.Tensor, y_u: torch.Tensor | None) -> torch.Tensor:
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
        total = torch.ones(y.shape[0], dtype=y.dtype, device=y.device) @ y  # [N] @ [N, b] -> [b]
        y.mul_(torch.where(total > 0, 1.0 / total.clamp_min(1e-30), torch.zeros_like(total)))  # [N, b] * [b]
        return y


def _spare(bufs: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """A work buffer other than the one holding ``x``."""
    return next(buf for buf in bufs if buf.data_ptr() != x.data_ptr())


def _transpose_into(dst: torch.Tensor, src: torch.Tensor, rows: int = 256) -> None:
    """``dst[b, N] = src[N, b].T`` in row tiles (faster than one strided copy)."""
    for r0 in range(0, src.shape[0], rows):
        dst[:, r0 : r0 + rows].copy_(src[r0 : r0 + rows].T)


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
