"""Vector indexes: inner-product top-k over stored vectors (cosine when both sides are normalised).

* ``TorchExactIndex`` — one matmul per block of queries, then ``topk``; exact, CPU or CUDA.
  The default: for the corpora here (10^4–10^6 atoms) a GPU matmul beats any ANN build.
* ``FaissIndex`` — ``IndexFlatIP`` (exact) or HNSW (approximate) for large corpora on CPU.

Ids are row positions in insertion order (int64). ``k`` larger than the index is clamped, so
results are ``[q, min(k, n)]`` and never contain padding.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch

from atomicrag.embed.encoders import resolve_device


@runtime_checkable
class VectorIndex(Protocol):
    dim: int

    def add(self, vectors: torch.Tensor) -> None:
        """Append ``[n, dim]`` vectors; their ids continue from ``len(self)``."""
        ...

    def search(self, queries: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scores [q, k] float32, ids [q, k] int64)``, best first, on CPU."""
        ...

    def __len__(self) -> int: ...


def _as_2d_float(x: torch.Tensor | np.ndarray, dim: int, what: str) -> torch.Tensor:
    t = torch.as_tensor(x)
    if t.dim() != 2 or t.shape[1] != dim:
        raise ValueError(f"{what} must be [n, {dim}], got {list(t.shape)}")
    return t.float()


class TorchExactIndex:
    """Exact top-k by ``queries @ vectors.T``, blocked over queries to bound memory."""

    def __init__(self, dim: int, device: str = "auto", max_block_bytes: int = 256 * 2**20) -> None:
        self.dim = dim
        self.device = resolve_device(device)
        self.max_block_bytes = max_block_bytes
        self._parts: list[torch.Tensor] = []
        self._matrix: torch.Tensor | None = None  # concatenation of _parts, built lazily

    def __len__(self) -> int:
        return sum(p.shape[0] for p in self._parts)

    def add(self, vectors: torch.Tensor | np.ndarray) -> None:
        self._parts.append(_as_2d_float(vectors, self.dim, "vectors").to(self.device))
        self._matrix = None

    @property
    def matrix(self) -> torch.Tensor:
        if self._matrix is None:
            self._matrix = torch.cat(self._parts) if self._parts else torch.empty(0, self.dim, device=self.device)
            self._parts = [self._matrix]
        return self._matrix

    def search(self, queries: torch.Tensor | np.ndarray, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        q = _as_2d_float(queries, self.dim, "queries")
        mat = self.matrix  # [n, d]
        n = mat.shape[0]
        k = min(k, n)
        scores = torch.empty(q.shape[0], k)
        ids = torch.empty(q.shape[0], k, dtype=torch.long)
        if k == 0 or q.shape[0] == 0:
            return scores, ids
        # one block's score matrix [b, n] float32 stays under max_block_bytes
        block = max(1, self.max_block_bytes // (4 * n))
        for s in range(0, q.shape[0], block):
            qb = q[s: s + block].to(self.device)
            sim = qb @ mat.T  # [b, d] @ [d, n] -> [b, n]
            top = torch.topk(sim, k, dim=1)  # sorted, best first
            scores[s: s + block] = top.values.cpu()
            ids[s: s + block] = top.indices.cpu()
        return scores, ids


class FaissIndex:
    """FAISS inner-product index: exact ``IndexFlatIP`` or approximate HNSW."""

    def __init__(self, dim: int, hnsw: bool = False, hnsw_m: int = 32, ef_construction: int = 200,
                 ef_search: int = 128) -> None:
        import faiss

        self.dim = dim
        self.hnsw = hnsw
        if hnsw:
            self.index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = ef_construction
            self.index.hnsw.efSearch = ef_search
        else:
            self.index = faiss.IndexFlatIP(dim)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def add(self, vectors: torch.Tensor | np.ndarray) -> None:
        v = _as_2d_float(vectors, self.dim, "vectors").cpu().numpy()
        self.index.add(np.ascontiguousarray(v))

    def search(self, queries: torch.Tensor | np.ndarray, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        q = np.ascontiguousarray(_as_2d_float(queries, self.dim, "queries").cpu().numpy())
        k = min(k, len(self))
        if k == 0 or q.shape[0] == 0:
            return torch.empty(q.shape[0], k), torch.empty(q.shape[0], k, dtype=torch.long)
        scores, ids = self.index.search(q, k)
        return torch.from_numpy(scores).float(), torch.from_numpy(ids).long()


def build_index(kind: str, dim: int, *, device: str = "auto", hnsw: bool = False, **kwargs: object) -> VectorIndex:
    """``kind``: ``exact`` (torch) or ``faiss`` (``hnsw=True`` for approximate search)."""
    if kind == "exact":
        return TorchExactIndex(dim, device=device, **kwargs)  # type: ignore[arg-type]
    if kind == "faiss":
        return FaissIndex(dim, hnsw=hnsw, **kwargs)  # type: ignore[arg-type]
    raise ValueError(f"unknown vector index {kind!r}; known: exact, faiss")
