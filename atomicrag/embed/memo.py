"""An embedder with a per-text memo: the one caching embedder of the benchmark scripts.

Benchmarks run many variants (retriever rows, a grid, fidelity switches) over the same questions,
atoms and entities. ``MemoEmbedder`` encodes each distinct text once per role (query or passage)
and answers repeats from its memo, so a variant's cost is its own work, not re-embedding. The
passage memo can be pre-filled from a built graph's vectors (``seed_passages``): texts the graph
already embedded are not encoded again. An encoder is deterministic per text, so a memo hit is the
vector a fresh call returns (in the dtype the encoder returned it).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


class MemoEmbedder:
    """Wraps ``inner`` (anything with ``name``, ``dim`` and ``encode(texts, is_query=)``);
    ``dtype``: store (and return) vectors in this type, e.g. float32 to match a graph's stored
    vectors given to ``seed_passages`` (None: as the encoder returns them)."""

    def __init__(self, inner: Any, dtype: torch.dtype | None = None) -> None:
        self.inner, self.name, self.dim, self.dtype = inner, inner.name, inner.dim, dtype
        self.memo: dict[tuple[str, bool], torch.Tensor] = {}
        self.encoded = 0  # distinct texts the inner encoder was asked for (memo misses)

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        todo = [t for t in dict.fromkeys(texts) if (t, is_query) not in self.memo]
        if todo:
            vectors = torch.as_tensor(self.inner.encode(todo, is_query=is_query))
            if self.dtype is not None:
                vectors = vectors.to(self.dtype)
            if len(vectors) != len(todo):  # a broken encoder must not misalign the memo
                raise ValueError(f"embedder {self.name!r} returned {len(vectors)} vectors for {len(todo)} texts")
            for t, row in zip(todo, vectors):
                self.memo[(t, is_query)] = row
            self.encoded += len(todo)
        if not texts:
            return torch.as_tensor(self.inner.encode([], is_query=is_query))
        return torch.stack([self.memo[(t, is_query)] for t in texts])

    def seed_passages(self, pairs: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Pre-fill the passage memo with (text, vector) pairs this embedder made before."""
        for text, vec in pairs:
            self.memo.setdefault((text, False), vec if self.dtype is None else vec.to(self.dtype))

    def clear(self) -> None:
        """Forget every memoised vector (a timing run measures cold encoding)."""
        self.memo.clear()
