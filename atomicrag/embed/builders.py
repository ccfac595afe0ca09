"""Embedder builders, one per ``embedder.name`` (registry keys of ``registry.EMBEDDERS``).

Signature ``(cfg: dict of EmbedderConfig fields, pooling: str) -> Embedder``; ``pooling`` is the
effective pooling (``factory.effective_pooling``: ``embedder.embed_pooling=mean`` wins). Heavy libraries
load only inside the builder that needs them.
"""
from __future__ import annotations

from typing import Any

from atomicrag.embed.protocol import Embedder

_ENCODER_FIELDS = ("normalize", "query_prefix", "passage_prefix", "max_length", "batch_size", "batch_tokens", "fp16",
                   "device", "precision", "trust_remote_code")


def _kwargs(cfg: dict[str, Any], pooling: str) -> dict[str, Any]:
    return {"pooling": pooling, **{k: cfg[k] for k in _ENCODER_FIELDS}}


def fake(cfg: dict[str, Any], pooling: str) -> Embedder:
    from atomicrag.embed.fake import FakeEmbedder

    return FakeEmbedder(cfg["dim"])


def sentence_transformers(cfg: dict[str, Any], pooling: str) -> Embedder:
    from atomicrag.embed.encoders import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(cfg["model"], **_kwargs(cfg, pooling))


def transformers(cfg: dict[str, Any], pooling: str) -> Embedder:
    from atomicrag.embed.encoders import TransformersEmbedder

    return TransformersEmbedder(cfg["model"], **_kwargs(cfg, pooling))


def onnx(cfg: dict[str, Any], pooling: str) -> Embedder:
    from atomicrag.embed.onnx_encoder import OnnxEmbedder

    return OnnxEmbedder(cfg["model"], **_kwargs(cfg, pooling))
