"""Certified top-k stopping for PPR: stop a query once no atom outside its top-k can overtake.

Retrieval keeps only the top-k atoms of each query, and their *set* is settled long before the
scores reach the accuracy of ``max_iter`` power steps (on the synthetic HotpotQA-sized graph
most queries certify their top-25 after 6-9 Chebyshev steps, the accuracy bound stops them after
12-14: ``results/benchmarks/speed_ppr_certified.txt``). This module proves, per query, that the
current iterate's top-k set is the exact one.

Bound. Let ``y`` be any iterate, ``r = s - (I - M) y`` its residual, ``G = (I - M)^-1 >= 0`` and d
the weighted degrees. The error ``e = y* - y = G r`` satisfies ``e = r + M e``. Because A is
symmetric, ``G D = D G^T`` (``G_lj d_j = d_l G_jl``), and the columns of G sum to at most
``1/(1-c)``, so for every node l

    |e_l| <= sum_j G_lj |r_j| = d_l sum_j G_jl |r_j| / d_j <= d_l * rho,   rho = max_j (|r_j| / d_j) / (1-c)

(dangling j are isolated and never reach l). Applying ``e = r + M e`` twice more, with
``sum_l M_il d_l = c d_i``, gives for every atom i

    |e_i| <= eps_i = |r_i| + (M |r|)_i + c^2 d_i rho

The residual left after a few Chebyshev steps is spread thinly over many entities, so ``rho``
(a maximum of residual per degree) is far smaller than the L1 norm, so it certifies queries
steps before the L1 bound ``||r||_1 / (1-c)`` could. Only the atom rows of M are multiplied.

Test. With S the k atoms of largest ``y`` and ``tau`` the midpoint of the k-th and (k+1)-th
largest ``y``: if every atom of S has ``y - eps > tau`` and every other atom has ``y + eps <= tau``,
the atoms of S have ``y* > tau`` and all others ``y* <= tau``: the top-k set of ``y`` is that of
``y*``. (This is "exactly k atoms certainly above tau and exactly k possibly above": the first
half needs eps at k atoms only, the second one column maximum.) The final scores are a positive
multiple of ``y*`` (``ppr.PPR._finish``, dangling mass to the seeds), so the set is the exact
retrieval result; the order inside it is the iterate's. No sort of all atoms: the (k+1) largest
values are found among the (k+1) groups of 64 atoms with the largest maxima. A margin absorbs
float32 rounding; exact ties are never certified, and such a query stops at the accuracy bound.

A certified query's top-k and scores are read off right there (``harvest``) and its column
leaves the block; only queries still running at ``max_iter`` are ranked from the full iterate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from atomicrag.retrieve.propagate.base import SeedTriplets

GROUP = 64  # atoms per group of the two-stage top-(k+1)


@dataclass
class TopkCertificate:
    """What the check needs: atom rows (propagation order), k, and the bound's operators.

    Besides certifying, it collects the answer: ``harvest`` turns a certified column's top-k
    (found by the check among the top groups, ``[b, k]``) into final scores, so a stopped query
    is never copied out of the ``[N, b]`` iterate (that copy cost more than a product).
    """

    atom_rows: torch.Tensor  # [A] int64: row of each atom in the iterate
    k: int
    m_atoms: torch.Tensor  # [A, N] CSR: the atom rows of M
    deg_atoms: torch.Tensor  # [A] c^2 d_i at the atoms
    inv_deg: torch.Tensor  # [N, 1] 1/d (0 where dangling), propagation order
    c: float
    buffers: list[torch.Tensor]  # two work buffers [N, b]
    out_vals: torch.Tensor | None = None  # [b0, k'] final scores of the harvested columns (k' = min(k, A))
    out_idx: torch.Tensor | None = None  # [b0, k'] their atom indices (0 = first atom)
    rest_cols: torch.Tensor | None = None  # [b'] block columns the solver returns unharvested
    _top: tuple[torch.Tensor, torch.Tensor] | None = None  # (values, atom ids) [b, k'] of the checked y
    _rho: torch.Tensor | None = None  # [b] max_j |r_j| / d_j of the last residual

    def start(self, width: int, device: torch.device, dtype: torch.dtype) -> None:
        """Empty answer arrays for a block of ``width`` queries."""
        kk = min(self.k, self.atom_rows.numel())
        self.out_vals = torch.zeros(width, kk, dtype=dtype, device=device)
        self.out_idx = torch.zeros(width, kk, dtype=torch.int64, device=device)
        self.rest_cols = None
        self._top = None

    def residual(self, t: torch.Tensor, y_prev: torch.Tensor, y: torch.Tensor, omega: float,
                 s: SeedTriplets) -> torch.Tensor:
        """``[b]`` L1 norms of ``r = s + M y - y``; ``|r|`` is kept in ``buffers[1]`` and
        ``max_j |r_j| / d_j`` in ``_rho`` for ``check``.

        ``t = omega M y + (1 - omega) y_prev`` is the fused Chebyshev step (seeds not yet added).
        """
        self._top = None  # a new iterate: the last check's top-k is stale
        n, b = y.shape
        r = torch.add(t, y_prev, alpha=omega - 1.0, out=self.buffers[1].view(-1)[: n * b].view(n, b))
        r.div_(omega).sub_(y)  # [N, b]: M y - y
        s.add_to_columns(r)  # + s
        r.abs_()
        weighted = torch.mul(r, self.inv_deg, out=self.buffers[0].view(-1)[: n * b].view(n, b))  # |r_j| / d_j
        self._rho = column_max(weighted)  # [b]
        return torch.ones(n, dtype=r.dtype, device=r.device) @ r  # [N] @ [N, b] -> [b]

    def _atom_values(self, y: torch.Tensor) -> tuple[torch.Tensor, int]:
        """``y`` at the atoms as ``[G*64, b]`` (padding -inf) in ``buffers[0]``, and the group count G."""
        b = y.shape[1]
        a = self.atom_rows.numel()
        groups = -(-a // GROUP)
        flat = self.buffers[0].view(-1)
        if flat.numel() < groups * GROUP * b:  # tiny graphs: the padding does not fit the buffer
            flat = torch.empty(groups * GROUP * b, dtype=y.dtype, device=y.device)
        ya = flat[: groups * GROUP * b].view(groups * GROUP, b)
        torch.index_select(y, 0, self.atom_rows, out=ya[:a])  # [A, b]
        ya[a:] = float("-inf")  # padding of the last group
        return ya, groups

    def check(self, y: torch.Tensor, free: torch.Tensor) -> torch.Tensor:
        """``[b]`` bool: queries whose top-k atom set of ``y`` is certified exact (after ``residual``).

        ``free`` is an ``[N, b]`` buffer holding nothing live (it receives the bounds). With S the
        top-k atoms of ``y`` and tau the midpoint of the k-th and (k+1)-th values, the set is
        certified iff every atom of S has ``y - eps > tau`` and no other atom has ``y + eps > tau``
        (both with a rounding margin): the first needs eps at k atoms only, the second one maximum.
        """
        n, b = y.shape
        a = self.atom_rows.numel()
        if self.k >= a:
            return torch.ones(b, dtype=torch.bool, device=y.device)
        r = self.buffers[1].view(-1)[: n * b].view(n, b)  # |r| from residual()
        ya, groups = self._atom_values(y)
        eps = torch.index_select(r, 0, self.atom_rows, out=free.view(-1)[: a * b].view(a, b))  # |r| at atoms
        torch.addmm(eps, self.m_atoms, r, out=eps)  # + M|r|: [A, N] @ [N, b]
        rho = self._rho / (1.0 - self.c)  # [b]: max_j |r_j| / d_j / (1-c), from residual()
        eps.addr_(self.deg_atoms, rho)  # + c^2 d_i rho: [A] x [b]
        tau, vals, pos = _top_values(ya, self.k, groups)  # [b], [b, k+1], [b, k+1]
        self._top = (vals[:, : self.k], pos[:, : self.k])
        margin = 16 * torch.finfo(y.dtype).eps / (1.0 - self.c)  # float rounding of y (sums to <= 1/(1-c))
        top = pos[:, : self.k].T  # [k, b] atoms of S
        sure = (vals[:, : self.k].T - eps.gather(0, top)).amin(0) > tau + margin  # [b]: all of S above tau
        u = eps.add_(ya[:a])  # [A, b]: y + eps (eps is spent)
        u.scatter_(0, top, float("-inf"))  # S itself is not "another atom"
        return sure & (column_max(u) <= tau - margin)  # [b]: and nothing else can reach tau

    def harvest(self, y: torch.Tensor, done: torch.Tensor, cols: torch.Tensor) -> None:
        """Final top-k scores of the columns ``done`` of ``y`` into ``out_*`` rows ``cols[done]``.

        Scores are what ``ppr.PPR._finish`` gives (seed dangling: ``y / sum(y)``), atom order is
        the iterate's, as when the whole column was copied out and ranked.
        """
        if self._top is None:  # stopped on the accuracy bound alone: no check ran on this iterate
            a = self.atom_rows.numel()
            ya, groups = self._atom_values(y)
            vals, pos = _top_values(ya, self.k, groups)[1:] if self.k < a else torch.topk(ya[:a].T, a, dim=1)
            self._top = (vals[:, : self.k], pos[:, : self.k])
        vals, pos = self._top
        total = torch.ones(y.shape[0], dtype=y.dtype, device=y.device) @ y  # [N] @ [N, b] -> [b]
        scale = torch.where(total > 0, 1.0 / total.clamp_min(1e-30), torch.zeros_like(total))  # [b]
        rows = cols[done]
        self.out_vals[rows] = vals[done] * scale[done].unsqueeze(1)  # [d, k] * [d, 1]
        self.out_idx[rows] = pos[done]


def column_max(x: torch.Tensor) -> torch.Tensor:
    """``x.amax(0)`` for ``[R, b]``; on CPU folded over row blocks of ~1 MB (torch's reduction
    over the leading dim of a wide row-major matrix is slow for every b >= 8)."""
    r, b = x.shape
    if x.device.type != "cpu" or b < 8 or r == 0:
        return x.amax(0)
    rows = max(256, min(8192, (1 << 18) // b))
    if r <= 2 * rows:
        return x.amax(0)
    acc = x[:rows].clone()  # [rows, b]
    full = (r // rows) * rows
    for i in range(rows, full, rows):
        torch.maximum(acc, x[i: i + rows], out=acc)
    out = acc.amax(0)
    return torch.maximum(out, x[full:].amax(0)) if full < r else out


def _top_values(ya: torch.Tensor, k: int, groups: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Midpoint of the k-th and (k+1)-th largest entries of every column of ``ya`` [G*64, b] (``[b]``),
    with the k+1 largest values and their rows (``[b, k+1]`` each, descending).

    The (k+1) largest entries of a column lie in the (k+1) groups with the largest maxima (any
    entry outside them is below k+1 group maxima), so only those groups are sorted.
    """
    b = ya.shape[1]
    view = ya.view(groups, GROUP, b)
    top_groups = torch.topk(view.amax(1), min(k + 1, groups), dim=0).indices  # [k+1, b]
    cols = torch.arange(b, device=ya.device).unsqueeze(0)  # [1, b]
    cand = view[top_groups, :, cols]  # [k+1, b, 64]
    vals, j = torch.topk(cand.permute(1, 0, 2).reshape(b, -1), k + 1, dim=1)  # [b, k+1]
    # candidate j of column q is entry j % 64 of its group top_groups[j // 64, q]
    rows = top_groups.T.gather(1, torch.div(j, GROUP, rounding_mode="floor")) * GROUP + j % GROUP  # [b, k+1]
    return 0.5 * (vals[:, k - 1] + vals[:, k]), vals, rows


def csr_rows(m: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The rows ``rows`` of CSR ``m`` as a CSR matrix ``[len(rows), N]``."""
    crow, col, val = m.crow_indices().long(), m.col_indices(), m.values()
    counts = crow[rows + 1] - crow[rows]  # [R]
    new_crow = torch.zeros(rows.numel() + 1, dtype=torch.int64, device=val.device)
    new_crow[1:] = torch.cumsum(counts, 0)
    offs = torch.arange(int(new_crow[-1]), device=val.device) - torch.repeat_interleave(new_crow[:-1], counts)
    src = torch.repeat_interleave(crow[rows], counts) + offs  # [nnz'] entry ids in m
    return torch.sparse_csr_tensor(new_crow.to(m.crow_indices().dtype), col[src], val[src],
                                   (rows.numel(), m.shape[1]), device=val.device)


def select_columns(s: SeedTriplets, keep: torch.Tensor) -> SeedTriplets:
    """The seeds of the queries ``keep`` (sorted column ids), renumbered 0 .. len(keep)-1."""
    slot = torch.full((s.num_queries,), -1, dtype=torch.int64, device=s.query.device)
    slot[keep] = torch.arange(keep.numel(), device=keep.device)
    q = slot[s.query]
    m = q >= 0
    return SeedTriplets(s.node[m], q[m], s.value[m], int(keep.numel()), s.num_nodes, s.has_seed[keep])


def make_certificate(op: dict[str, Any], deg: torch.Tensor, num_entities: int, k: int, c: float,
                     buffers: list[torch.Tensor]) -> TopkCertificate:
    """The certificate for the atoms (nodes ``num_entities..N-1``) of operator ``op`` (ppr.PPR);
    ``deg`` [N] are the weighted degrees in node order."""
    key = ("certificate", num_entities)
    if key not in op:
        m = op["M"]
        n = m.shape[0]
        if op["perm"] is not None:
            deg = deg[op["perm"]]  # propagation order
        rows = (op["inv"][num_entities:] if op["inv"] is not None
                else torch.arange(num_entities, n, device=m.device))  # [A]
        inv_deg = torch.where(deg > 0, 1.0 / deg.clamp_min(1e-300), torch.zeros_like(deg))
        op[key] = (rows, csr_rows(m, rows), (c * c * deg[rows]).to(m.dtype), inv_deg.to(m.dtype).unsqueeze(1))
    rows, m_atoms, deg_atoms, inv_deg = op[key]
    return TopkCertificate(rows, k, m_atoms, deg_atoms, inv_deg, c, buffers)
