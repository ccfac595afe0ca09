"""A deterministic, dependency-free embedder for tests and smoke runs.

Each text is a hashed bag of lower-cased words plus character trigrams (feature hashing with
a sign bit), L2-normalised. Texts that share words or word pieces get a higher cosine, so
retrieval on it behaves sensibly, and the same text always gives the same vector on every
machine (hashing uses blake2b, not Python's salted ``hash``).
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import numpy as np
import torch

_WORD_RE = re.compile(r"\w+")


@lru_cache(maxsize=1 << 18)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    # the sign bit makes unrelated features cancel on average instead of piling up
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class FakeEmbedder:
    """``FakeEmbedder(dim)``: hashed words (weight 1) + character trigrams (weight ``trigram_weight``)."""

    def __init__(self, dim: int = 64, trigram_weight: float = 0.5) -> None:
        if dim <= 0:
            raise ValueError("FakeEmbedder dim must be > 0")
        self.dim = dim
        self.trigram_weight = trigram_weight
        self.name = f"fake|dim={dim}|tri={trigram_weight}"

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float64)
        words = _WORD_RE.findall(text.lower())
        for w in words:
            i, s = _bucket("w:" + w, self.dim)
            vec[i] += s
            padded = f"#{w}#"
            for k in range(len(padded) - 2):
                i, s = _bucket("t:" + padded[k: k + 3], self.dim)
                vec[i] += s * self.trigram_weight
        norm = np.linalg.norm(vec)
        if norm == 0.0:  # no words at all: a fixed unit vector keeps the output normalised
            i, s = _bucket("<empty>", self.dim)
            vec[i] = s
            norm = 1.0
        return vec / norm

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        if not texts:
            return torch.empty(0, self.dim)
        return torch.from_numpy(np.stack([self._vector(t) for t in texts])).float()
