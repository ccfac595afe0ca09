"""The encoders this package provides, by ``embedder.name`` (see ``atomicrag.core.registry``)."""
from __future__ import annotations

from atomicrag.core.registry import EMBEDDERS

for _name in ("fake", "sentence_transformers", "transformers", "onnx"):
    EMBEDDERS.add(_name, f"atomicrag.embed.builders:{_name}")
