"""Shared pieces of the propagators: the protocol, seed handling and the prepared graph.

Every propagator takes the graph adjacency (sparse CSR ``[N, N]``, symmetric, weighted, node order
entities then atoms) and the personalisation of a whole batch of queries (``[Q, N]``, dense or
sparse COO/CSR) and returns scores ``[Q, N]``. All queries are propagated together.

Preparing the adjacency (degrees, normalised transition matrices, int32 indices, a locality
ordering) costs about as much as a few propagation steps, so it is done once per adjacency
object and cached on the propagator (``GraphCache``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch


@runtime_checkable
class Propagator(Protocol):
    """``scores[Q, N] = propagator(adj[N, N] CSR, seeds[Q, N])``; extra inputs as keywords."""

    def __call__(self, adj: torch.Tensor, seeds: torch.Tensor, **kwargs: Any) -> torch.Tensor: ...


@dataclass
class SeedTriplets:
    """A ``[Q, N]`` personalisation as (node, query, weight) triplets, sorted by query.

    Sparse on purpose: real queries seed ~20 entities and ~25 atoms out of 10^5 nodes, so the
    restart term is a scatter of a few entries per query rather than a dense ``[N, Q]`` add.
    """

    node: torch.Tensor  # [K] int64
    query: torch.Tensor  # [K] int64, non-decreasing
    value: torch.Tensor  # [K] float64, > 0, each query's values sum to 1 (cast where used)
    num_queries: int
    num_nodes: int
    has_seed: torch.Tensor  # [Q] bool: False for a query without any positive seed

    def block(self, q0: int, q1: int) -> SeedTriplets:
        """The queries ``q0 .. q1-1``, renumbered from 0."""
        lo, hi = torch.searchsorted(self.query, torch.tensor([q0, q1], device=self.query.device)).tolist()
        return SeedTriplets(
            self.node[lo:hi], self.query[lo:hi] - q0, self.value[lo:hi], q1 - q0, self.num_nodes,
            self.has_seed[q0:q1],
        )

    def dense(self, transposed: bool = False, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Dense ``[Q, N]`` (or ``[N, Q]`` when ``transposed``) matrix."""
        val = self.value.to(dtype)
        if transposed:
            out = torch.zeros(self.num_nodes, self.num_queries, device=val.device, dtype=dtype)
            out.index_put_((self.node, self.query), val, accumulate=True)  # [N, Q]
        else:
            out = torch.zeros(self.num_queries, self.num_nodes, device=val.device, dtype=dtype)
            out.index_put_((self.query, self.node), val, accumulate=True)  # [Q, N]
        return out

    def add_values(self, target: torch.Tensor, values: torch.Tensor) -> None:
        """``target[N, Q] += V`` where V has the seeds' pattern and the given values ``[K]``."""
        target.view(-1).index_add_(0, self.node * self.num_queries + self.query, values.to(target.dtype))

    def add_to_columns(self, target: torch.Tensor, scale: float | torch.Tensor = 1.0) -> None:
        """``target[N, Q] += scale * S[N, Q]`` in place, touching only the seeded entries."""
        flat = target.view(-1)  # [N*Q], row-major: entry (n, q) sits at n*Q + q
        vals = self.value.to(target.dtype)
        if not (isinstance(scale, float) and scale == 1.0):
            vals = vals * scale
        flat.index_add_(0, self.node * self.num_queries + self.query, vals)


def seed_triplets(seeds: torch.Tensor, num_nodes: int | None = None, normalise: bool = True) -> SeedTriplets:
    """Turn a dense or sparse ``[Q, N]`` seed matrix into per-query-normalised triplets.

    Negative and zero weights are dropped (a personalisation is a distribution). Duplicate
    entries of an uncoalesced COO matrix are summed.
    """
    if seeds.dim() != 2:
        raise ValueError(f"seeds must be [Q, N], got shape {tuple(seeds.shape)}")
    q, n = seeds.shape
    if num_nodes is not None and n != num_nodes:
        raise ValueError(f"seeds have {n} columns but the graph has {num_nodes} nodes")
    if seeds.layout == torch.sparse_csr:
        seeds = seeds.to_sparse_coo()
    if seeds.layout == torch.sparse_coo:
        seeds = seeds.coalesce()  # sorted by (query, node), duplicates summed
        qi, ni = seeds.indices()
        val = seeds.values()
    elif seeds.layout == torch.strided:
        qi, ni = seeds.nonzero(as_tuple=True)  # row-major order: sorted by query
        val = seeds[qi, ni]
    else:
        raise ValueError(f"unsupported seed layout {seeds.layout}")
    val = val.to(torch.float64)
    keep = val > 0
    qi, ni, val = qi[keep], ni[keep], val[keep]
    mass = torch.zeros(q, dtype=torch.float64, device=val.device).index_add_(0, qi, val)  # [Q]
    has_seed = mass > 0
    if normalise and val.numel():
        val = val / mass[qi]  # [K]: each query sums to 1
    return SeedTriplets(ni.long(), qi.long(), val, q, n, has_seed)


def check_adjacency(adj: torch.Tensor) -> torch.Tensor:
    """Accept CSR (preferred), COO or dense; return CSR ``[N, N]`` float32."""
    if adj.dim() != 2 or adj.shape[0] != adj.shape[1]:
        raise ValueError(f"adjacency must be square [N, N], got {tuple(adj.shape)}")
    if adj.layout == torch.sparse_csr:
        return adj if adj.dtype == torch.float32 else adj.to(torch.float32)
    if adj.layout == torch.sparse_coo:
        return adj.coalesce().to(torch.float32).to_sparse_csr()
    return adj.to(torch.float32).to_sparse_csr()


@dataclass
class PreparedGraph:
    """Degrees and normalised transition matrices of one adjacency, built once."""

    num_nodes: int
    device: torch.device
    crow: torch.Tensor  # [N+1] int64
    col: torch.Tensor  # [nnz] int64
    val: torch.Tensor  # [nnz] float32, raw symmetric weights (as stored)
    deg: torch.Tensor  # [N] float64, weighted degree (row sums)
    dangling: torch.Tensor  # [N] bool, zero out-degree
    row: torch.Tensor  # [nnz] int64, row of every stored entry
    symmetric: bool
    extra: dict[str, Any] = field(default_factory=dict)  # per-method derived operators

    @property
    def inv_deg(self) -> torch.Tensor:  # [N] float64, 0 where dangling
        return torch.where(self.dangling, torch.zeros_like(self.deg), 1.0 / self.deg.clamp_min(1e-300))

    def require_symmetric(self, method: str) -> None:
        if not self.symmetric:
            raise ValueError(
                f"{method} needs the symmetric (undirected) Atom-Entity Graph adjacency; "
                "symmetrise a directed matrix first, e.g. A + A.T"
            )

    def csr(self, values: torch.Tensor, index_dtype: torch.dtype = torch.int32) -> torch.Tensor:
        """A CSR matrix with this graph's pattern and the given values.

        int32 indices halve the index traffic of every SpMM and select MKL's fast path on CPU.
        """
        n = self.num_nodes
        return torch.sparse_csr_tensor(
            self.crow.to(index_dtype), self.col.to(index_dtype), values, (n, n), device=self.device
        )

    def transition_t(self, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """``scale * P^T`` with ``P = D^-1 A`` row-stochastic: entry (i, j) = scale * A[i, j] / deg[j].

        For a symmetric A, ``P^T = A D^-1``, so this is A's pattern with every value divided by the
        degree of its column. Dangling columns are zero.
        """
        return self.csr((self.val.double() * (scale * self.inv_deg)[self.col]).to(dtype))

    def transition(self, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """``scale * P = scale * D^-1 A`` (row-normalised): entry (i, j) = scale * A[i, j] / deg[i]."""
        return self.csr((self.val.double() * (scale * self.inv_deg)[self.row]).to(dtype))


def prepare_graph(adj: torch.Tensor, device: torch.device | str | None = None) -> PreparedGraph:
    adj = check_adjacency(adj)
    dev = torch.device(device) if device is not None else adj.device
    adj = adj.to(dev)
    crow = adj.crow_indices().to(torch.int64)
    col = adj.col_indices().to(torch.int64)
    val = adj.values().to(torch.float32)
    n = adj.shape[0]
    counts = crow[1:] - crow[:-1]  # [N] stored entries per row
    row = torch.repeat_interleave(torch.arange(n, device=dev), counts)  # [nnz]
    if (val < 0).any():
        raise ValueError("adjacency weights must be non-negative")
    deg = torch.zeros(n, device=dev, dtype=torch.float64).index_add_(0, row, val.double())  # [N]
    # symmetric check: the transpose's (row, col, val) sorted the same way must coincide
    key = row * n + col
    key_t = col * n + row
    order_t = torch.argsort(key_t)
    symmetric = bool(torch.equal(key, key_t[order_t]) and torch.allclose(val, val[order_t]))
    return PreparedGraph(n, dev, crow, col, val, deg, deg <= 0, row, symmetric)


class GraphCache:
    """One-slot cache: the prepared form of the last adjacency seen (compared by identity)."""

    def __init__(self) -> None:
        self._adj: torch.Tensor | None = None
        self._device: torch.device | None = None
        self._prep: PreparedGraph | None = None

    def get(self, adj: torch.Tensor, device: torch.device | str | None = None) -> PreparedGraph:
        dev = torch.device(device) if device is not None else adj.device
        if self._prep is None or self._adj is not adj or self._device != dev:
            self._prep = prepare_graph(adj, dev)
            self._adj, self._device = adj, dev
        return self._prep


def block_width(num_nodes: int, num_queries: int, device: torch.device, buffers: int = 4,
                budget_bytes: float = 4e9, cache_bytes: float = 2e6, itemsize: int = 4,
                free_bytes: float | None = None) -> int:
    """Queries per block on CPU (all of them on CUDA, within a 16x larger budget).

    Two regimes:
    - small graphs: a block whose iterate ``[N, b]`` fits in about ``cache_bytes`` (a core's L2)
      stays in cache for the whole solve, so narrow blocks beat wide ones (Medical scale);
    - large graphs: that would leave fewer than 16 queries per block, and then wide blocks win:
      every stored entry reads a contiguous ``4 b``-byte row of the iterate, which turns random
      4-byte reads into KB-long streams (HotpotQA scale: one block of 1,024).
      ``budget_bytes`` bounds the ``buffers`` work buffers (at 10x HotpotQA, fewer queries a block).
    ``itemsize``: bytes per entry of the dtype the solve runs in (8 for the float64 exact solve).
    On CUDA the buffers also take at most half of the device's free memory (``free_bytes``; None:
    asked of the device), leaving the embedder and a co-located vLLM server their share.
    """
    n = max(num_nodes, 1)
    if device.type != "cpu":
        budget = 16 * budget_bytes
        if free_bytes is None and device.type == "cuda" and torch.cuda.is_available():
            free_bytes = float(torch.cuda.mem_get_info(device)[0])
        if free_bytes is not None:
            budget = min(budget, free_bytes / 2)
        b = int(budget // (itemsize * buffers * n))
    else:
        b = int(cache_bytes // (itemsize * n))
        if b >= 16:
            b = 1 << (b.bit_length() - 1)  # a power of two
        else:
            b = int(budget_bytes // (itemsize * buffers * n))
            b = b - b % 64 if b >= 64 else b
    return max(1, min(b, 1024, num_queries))


def resolve_device(name: str) -> torch.device | None:
    """``auto`` → CUDA when available, else the adjacency's own device (None)."""
    if name == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else None
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("retriever.device=cuda but CUDA is not available")
    return torch.device(name)
