"""The protocol of text encoders: texts in, a float32 tensor [n, dim] out."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class Embedder(Protocol):
    name: str  # identifies the model and its settings in cache keys
    dim: int

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        """Return [len(texts), dim] float32 on CPU, L2-normalised when the config says so."""
        ...
