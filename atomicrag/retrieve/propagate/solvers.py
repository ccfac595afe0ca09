"""Linear solvers for ``(I - M) y = s`` on a block of queries ``[N, b]`` (used by ``ppr.PPR``).

``M = c A D^-1`` (power, chebyshev) or, for CG, the symmetric form ``I - M = D^1/2 (I - c S) D^-1/2``
with ``S = D^-1/2 A D^-1/2``. For a symmetric A the spectrum of M lies in ``[-c, c]``.

Accuracy contract: the L1 error of ``restart * y`` after m power steps is exactly ``c^(m+1)``.
CG and Chebyshev stop each query as soon as a guaranteed bound on that error,
``restart * ||s - (I - M) y||_1 / (1 - c) = ||s - (I - M) y||_1`` (as ``||M||_1 <= c``), is below
``target`` = ``c^(max_iter+1)`` or ``tol``: never less accurate than ``max_iter`` power steps. A
query that has converged is frozen, so its result does not depend on the other queries of its block.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from atomicrag.retrieve.propagate.base import PreparedGraph, SeedTriplets
from atomicrag.retrieve.propagate.certify import TopkCertificate, select_columns


@dataclass
class SolveParams:
    c: float  # continuation probability (1 - restart)
    max_iter: int
    tol: float
    dtype: torch.dtype
    cert: TopkCertificate | None = None  # chebyshev: also stop once the top-k set is certified
    query_steps: torch.Tensor | None = None  # [b] set by chebyshev: the step at which each query stopped

    @property
    def target(self) -> float:
        """L1 error at which a query stops (never below what the dtype can resolve)."""
        t = self.tol if self.tol > 0 else self.c ** (self.max_iter + 1)
        return max(t, 8 * torch.finfo(self.dtype).eps)


def sparse_product(
    prep: PreparedGraph, op: dict[str, Any], s: SeedTriplets, values: torch.Tensor, out: torch.Tensor,
    scale: float, kind: str, c: float,
) -> None:
    """``out[N, b] += scale * X @ V``, V with the seeds' pattern and ``values``; X = M ("M") or S ("S").

    Column j of ``M = c A D^-1`` is ``c A[:, j] / deg[j]`` and of S is ``A[:, j] / sqrt(d_i d_j)``: both
    are row j of the symmetric A, read from the CSR row pointers. Work = the seeds' degrees, not
    nnz(A) * b: the first product of every solve is of the (sparse) seeds.
    """
    node = s.node if op["perm"] is None else op["perm"][s.node]  # original node ids [K]
    start = prep.crow[node]
    cnt = prep.crow[node + 1] - start  # [K] stored entries of every seed's row
    src = torch.repeat_interleave(torch.arange(node.numel(), device=node.device), cnt)  # [T] seed of entry
    first = torch.cumsum(cnt, 0) - cnt  # [K] offset of each seed's entries
    e = start[src] + torch.arange(int(cnt.sum()), device=node.device) - first[src]  # [T] CSR entry ids
    nbr = prep.col[e]  # [T] rows hit (original ids)
    w = prep.val[e].double() * values[src]  # [T]
    if kind == "M":
        w = w * (c * prep.inv_deg[node])[src]  # M[i, j] = c A[i, j] / deg[j]
    else:
        w = w / (prep.deg[nbr] * prep.deg[node][src]).sqrt()  # S[i, j] = A[i, j] / sqrt(d_i d_j)
    if op["inv"] is not None:
        nbr = op["inv"][nbr]  # propagation order
    out.view(-1).index_add_(0, nbr * s.num_queries + s.query[src], (scale * w).to(out.dtype))


def solve_power(prep: PreparedGraph, op: dict[str, Any], s: SeedTriplets, bufs: list[torch.Tensor],
                prm: SolveParams) -> tuple[torch.Tensor, int]:
    """``y_(k+1) = M y_k + s`` from ``y_0 = s``, ``max_iter`` steps (a block stops early at ``tol``)."""
    y, y_next, scratch = bufs[0], bufs[1], bufs[2]
    ones = torch.ones(y.shape[0], dtype=y.dtype, device=y.device)
    y.zero_()
    s.add_to_columns(y)  # y_0 = s
    steps = 0
    for k in range(prm.max_iter):
        if k == 0:  # y_0 = s is sparse: scatter the seeds' columns of M instead of a full SpMM
            y_next.zero_()
            sparse_product(prep, op, s, s.value, y_next, 1.0, "M", prm.c)
        else:
            torch.addmm(y_next, op["M"], y, beta=0.0, out=y_next)  # [N, N] @ [N, b] -> [N, b]
        s.add_to_columns(y_next)  # + s, only at the seeded entries
        steps += 1
        done = False
        if prm.tol > 0:  # L1 change per query, without temporaries (each would page-fault [N, b] afresh)
            torch.sub(y_next, y, out=scratch).abs_()
            done = bool((ones @ scratch * (1 - prm.c) < prm.tol).all())  # [N] @ [N, b] -> [b]
        y, y_next = y_next, y
        if done:
            break
    return y, steps


def solve_cg(prep: PreparedGraph, op: dict[str, Any], s: SeedTriplets, bufs: list[torch.Tensor],
             prm: SolveParams) -> tuple[torch.Tensor, int]:
    """CG on ``(I - c S) z = D^-1/2 s``, per-query stop; returns ``y = D^1/2 z``.

    The y-space residual is ``D^1/2 r`` (r the z-space residual), so the error bound is
    ``||D^1/2 r||_1``, one ``[N] @ [N, b]`` product per step.
    """
    z, r, p, t, scratch = bufs[:5]
    dh, c = op["dh"], prm.c  # [N] sqrt(degree), 1 where dangling
    ones = torch.ones_like(dh)

    def dot(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:  # column-wise u^T v -> [b]
        return ones @ torch.mul(u, v, out=scratch)  # gemv: the fastest reduction over dim 0
    z.zero_()
    r.zero_()
    b_val = s.value / dh[s.node].double()  # [K]: D^-1/2 s at the seeded entries
    s.add_values(r, b_val)  # r_0 = b - (I - cS) z_0 = b
    p.copy_(r)
    rr = dot(r, r)  # [b]
    active = rr > 0  # zero-seed queries never move
    steps = 0
    for k in range(prm.max_iter):
        if not bool(active.any()):
            break
        if k == 0:  # p_0 = b is sparse: t = p - c S p by scattering the seeds' columns of S
            t.copy_(p)
            sparse_product(prep, op, s, b_val, t, -c, "S", c)
        else:
            torch.addmm(p, op["M"], p, beta=1.0, alpha=-c, out=t)  # t = (I - cS) p: [N, N] @ [N, b]
        pt = dot(p, t)  # [b]: p^T (I - cS) p
        active &= pt > 0  # pt = 0 only once r = 0 exactly: converged
        alpha = torch.where(active, rr / pt, torch.zeros_like(rr))  # [b], 0 = frozen
        z.addcmul_(p, alpha)  # z += alpha p   ([N, b] * [b])
        r.addcmul_(t, -alpha)  # r -= alpha t
        rr_new = dot(r, r)  # [b]
        steps += 1
        active &= dh @ torch.abs(r, out=scratch) > prm.target  # [N] @ [N, b] -> [b]: L1 error bound
        beta = torch.where(active, rr_new / rr.clamp_min(torch.finfo(rr.dtype).tiny), torch.zeros_like(rr))
        p.mul_(beta).add_(r)  # p = r + beta p
        rr = rr_new
    return z.mul_(dh.unsqueeze(1)), steps  # y = D^1/2 z   ([N, b] * [N, 1])


def chebyshev_first_check(c: float, target: float, max_iter: int) -> int:
    """Steps before which Chebyshev is not expected to reach the L1 error ``target``.

    Its error after m steps falls like ``1 / T_m(1/c)`` (T the Chebyshev polynomial); the L1
    residual bound lags that estimate by a few steps on Atom-Entity Graphs (the accuracy stop's
    steps are in ``results/benchmarks/speed_ppr_certified.txt``), so checking earlier is wasted
    work. The residual check, not this estimate, decides when to stop.
    """
    if not 0.0 < c < 1.0:
        return 1
    arg = math.acosh(1.0 / c)
    for m in range(1, max_iter + 1):
        if m * arg - math.log(2.0) >= -math.log(target):  # log T_m(1/c) ~ m acosh(1/c) - log 2
            return min(m + 2, max_iter)
    return max_iter


def chebyshev_weights(c: float, steps: int) -> list[float]:
    """Golub–Varga weights for a spectrum in ``[-c, c]``: omega_1 = 1, omega_2, omega_3, ..."""
    out: list[float] = []
    omega = 1.0
    for k in range(steps):
        if k == 1:
            omega = 1.0 / (1.0 - c * c / 2.0)
        elif k > 1:
            omega = 1.0 / (1.0 - c * c * omega / 4.0)
        out.append(omega)
    return out


def _residual_l1(t: torch.Tensor, y_prev: torch.Tensor, y: torch.Tensor, omega: float, s: SeedTriplets,
                 scratch: torch.Tensor) -> torch.Tensor:
    """Per-query ``||s + M y - y||_1`` [b] from ``t = omega M y + (1 - omega) y_prev`` (the fused step).

    ``M y = (t - (1 - omega) y_prev) / omega`` is formed chunk by chunk in ``scratch`` (a few MB,
    reused, stays in cache), so t, y_prev and y are each read once; the seeded entries are then
    corrected exactly: ``+ |d + s| - |d|`` with d = M y - y at those few positions.
    """
    n, b = t.shape
    rows = max(1, scratch.numel() // b)
    buf = scratch[: rows * b].view(rows, b)
    ones = torch.ones(rows, dtype=t.dtype, device=t.device)
    total = torch.zeros(b, dtype=t.dtype, device=t.device)
    for i in range(0, n, rows):
        j = min(n, i + rows)
        part = torch.add(t[i:j], y_prev[i:j], alpha=omega - 1.0, out=buf[: j - i])
        part.div_(omega).sub_(y[i:j]).abs_()  # |M y - y| on rows i..j
        total += ones[: j - i] @ part  # [rows] @ [rows, b] -> [b]
    idx = (s.node, s.query)
    d = ((t[idx].double() + (omega - 1.0) * y_prev[idx].double()) / omega - y[idx].double())  # [K]
    fix = (d + s.value).abs() - d.abs()
    return total + torch.zeros(b, dtype=torch.float64, device=t.device).index_add_(0, s.query, fix).to(t.dtype)


def solve_chebyshev(prep: PreparedGraph, op: dict[str, Any], s: SeedTriplets, bufs: list[torch.Tensor],
                    prm: SolveParams) -> tuple[torch.Tensor, int]:
    """Chebyshev semi-iteration ``y_(k+1) = w_(k+1) (M y_k + s) + (1 - w_(k+1)) y_(k-1)``, per-query stop.

    Every step is one fused ``addmm``. On a check step it writes into a third buffer instead of
    over ``y_(k-1)``, so the residual ``s + M y_k - y_k`` can be recovered from the three iterates
    in one chunked read. A query stops once its error bound meets the target or, with
    ``prm.cert``, once its top-k set is certified (``certify.py``). Stopped queries are copied into
    ``result`` or, with a certificate, harvested (their top-k scores kept, ``cert.out_*``) and,
    when enough have stopped, the block is compacted to the active columns so later products
    cost only what is still running; then only the unharvested columns are returned
    (``cert.rest_cols`` says which). Checks start at ``chebyshev_first_check``
    (``first_cert_check`` with a certificate) and are then spaced by the observed residual decay
    (with a certificate: every ``CERT_GAP`` steps).
    """
    y, y_prev, t, result = bufs[:4]
    n, b0 = y.shape
    c, m, cert = prm.c, op["M"], prm.cert
    scratch = torch.empty(min(y.numel(), 1 << 20), dtype=y.dtype, device=y.device)  # 4 MB chunk buffer
    y.zero_()
    s.add_to_columns(y)  # y_1 = s (from y_0 = 0, omega_1 = 1)
    cols = torch.arange(b0, device=y.device)  # [b] column of ``result`` each iterate column belongs to
    prm.query_steps = torch.full((b0,), prm.max_iter, dtype=torch.int64, device=y.device)
    stopped = 0  # columns already in ``result``
    active = torch.ones(b0, dtype=torch.bool, device=y.device)  # [b] zero-seed queries stop at the 1st check
    next_check = chebyshev_first_check(c, prm.target, prm.max_iter)
    if cert is not None:
        next_check = min(next_check, first_cert_check(c, prm.max_iter))
    weights = chebyshev_weights(c, prm.max_iter + 1)
    # asymptotic error decay per step, c / (1 + sqrt(1 - c^2)); refined from the observed residuals
    rate = c / (1.0 + math.sqrt(1.0 - c * c)) if 0.0 < c < 1.0 else 0.5
    last_norm: float | None = None
    last_k = 0
    steps = 0
    for k in range(1, prm.max_iter + 1):  # y = y_k -> y_(k+1)
        omega = weights[k]
        steps += 1
        if k == 1:  # y_1 = s is sparse and y_0 = 0: scatter the seeds' columns of M
            y_prev.zero_()
            sparse_product(prep, op, s, s.value, y_prev, omega, "M", c)
        elif k < next_check:
            torch.addmm(y_prev, m, y, beta=1.0 - omega, alpha=omega, out=y_prev)  # [N, N] @ [N, b]
        else:
            torch.addmm(y_prev, m, y, beta=1.0 - omega, alpha=omega, out=t)  # same step, y_prev kept
            if cert is None:
                norms = _residual_l1(t, y_prev, y, omega, s, scratch)  # [b]: ||s + M y_k - y_k||_1
            else:  # the same norms, with |r| kept for the certificate
                norms = cert.residual(t, y_prev, y, omega, s)
            done = active & (norms <= prm.target)
            if cert is not None and not bool(done.all()):
                done |= active & cert.check(y, y_prev)  # y_(k-1) is no longer needed: its buffer is free
            n_done = int(done.sum())
            prm.query_steps[cols[done]] = k
            if cert is not None and n_done:  # their top-k scores now; the columns are dropped below
                cert.harvest(y, done, cols)
            if n_done == int(active.sum()) and stopped == 0:
                if cert is not None:  # everyone is harvested: nothing is left to return
                    cert.rest_cols = cols[:0]
                    return y[:, :0], steps
                return y, steps  # everyone stopped together: y_k is the answer, no copy
            if n_done and cert is None:  # freeze in place (full width: the earlier, bit-exact path)
                torch.where(done, y, result if stopped else torch.zeros_like(y[:1]), out=result)
            stopped += n_done
            active &= ~done
            if stopped == b0:
                if cert is not None:
                    cert.rest_cols = cols[:0]
                    return y[:, :0], steps
                return result, steps
            worst = float(norms[active].max())
            if last_norm is not None and worst < last_norm:
                rate = max(min(worst / last_norm, 0.95), 1e-3) ** (1.0 / max(k - last_k, 1))
            last_norm, last_k = worst, k
            # next check where the slowest active query is expected to meet the target; with a
            # certificate, a fixed spacing (CERT_GAP), which keeps each query's stopping step
            # independent of the other queries in its block
            ahead = math.ceil(math.log(prm.target / worst) / math.log(rate)) if worst > prm.target else 1
            next_check = k + (CERT_GAP if cert is not None else max(1, min(ahead, 4)))
            y_prev, t = t, y_prev  # rotate: y_prev holds y_(k+1) (before seeds), t (old y_(k-1)) is free
            if n_done and cert is not None and y.shape[1] > MIN_COMPACT_WIDTH:
                keep = torch.nonzero(active).squeeze(1)  # [b'] still running
                y, y_prev, t = _compact(y, y_prev, t, keep)
                s, cols, active = select_columns(s, keep), cols[keep], active[keep]
        s.add_to_columns(y_prev, omega)  # + omega * s
        y, y_prev = y_prev, y
    if cert is not None:  # out of steps: the running columns go back to be ranked by the caller
        keep = torch.nonzero(active).squeeze(1)  # [b']
        cert.rest_cols = cols[keep]
        if int(keep.numel()) == y.shape[1]:
            return y, steps
        return torch.index_select(y, 1, keep, out=t.view(-1)[: n * int(keep.numel())].view(n, -1)), steps
    if stopped == 0:
        return y, steps
    torch.where(active, y, result, out=result)  # out of steps: take what we have
    return result, steps


# Steps between certificate checks after the first. A check costs more than a product at full
# width, so checking every other step (a query then stops at most one step after it could have)
# is faster than checking every step. Static, so a query's stopping step never depends on the
# queries beside it.
CERT_GAP = 2

# A block this narrow is not compacted any further: an SpMM over a few columns costs about as
# much as over 32 (the matrix read dominates), so narrowing no longer saves work. A wider block
# is narrowed to its running queries however few they are (a few stragglers left at full width
# can cost more than the whole solve before them).
MIN_COMPACT_WIDTH = 32


def _compact(y: torch.Tensor, y_next: torch.Tensor, free: torch.Tensor,
             keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The columns ``keep`` of ``y`` and ``y_next`` as narrower contiguous ``[N, b']`` views of the
    same three buffers (``free`` holds nothing live), plus a free third one."""
    n, b = y.shape[0], int(keep.numel())

    def narrow(buf: torch.Tensor) -> torch.Tensor:
        return buf.view(-1)[: n * b].view(n, b)

    y_new = torch.index_select(y, 1, keep, out=narrow(free))  # y's buffer is free afterwards
    y_next_new = torch.index_select(y_next, 1, keep, out=narrow(y))  # then y_next's
    return y_new, y_next_new, narrow(y_next)


def first_cert_check(c: float, max_iter: int) -> int:
    """First step at which a top-k certificate is worth trying: where the L1 residual is expected
    near 1e-2 (c = 0.7: step 8; c = 0.3: step 5).

    A check over the full block costs more than a product, so checking before most queries can
    pass loses time. On the HotpotQA-sized synthetic graph most queries certify by then (1,024
    queries, c = 0.7: 76% at step 6, 91% by step 8; ``results/benchmarks/speed_ppr_certified.txt``);
    on the real 2Wiki sentence graph they certify later. The step is static, not adapted to the
    block, so a query's stopping step never depends on the queries beside it.
    """
    return min(chebyshev_first_check(c, 1e-2, max_iter), max_iter)
