"""The fake embedder: deterministic, normalised, and similar texts score higher."""
from __future__ import annotations

import dataclasses

import torch

from atomicrag.core.config import EmbedderConfig, FidelityConfig
from atomicrag.embed import Embedder, FakeEmbedder, build_embedder


def test_deterministic_and_normalised() -> None:
    texts = ["Frank Borzage directed No Greater Glory.", "", "Paris is in France."]
    a = FakeEmbedder(64).encode(texts)
    b = FakeEmbedder(64).encode(texts, is_query=True)
    assert a.dtype == torch.float32 and a.shape == (3, 64)
    assert torch.equal(a, b)
    assert torch.allclose(a.norm(dim=1), torch.ones(3), atol=1e-5)
    assert FakeEmbedder(32).encode([]).shape == (0, 32)


def test_similar_texts_have_higher_cosine() -> None:
    emb = FakeEmbedder(256)
    q, near, far = emb.encode(["Who directed the film No Greater Glory?",
                               "No Greater Glory is a 1934 film directed by Frank Borzage.",
                               "The mitochondria is the powerhouse of the cell."])
    assert q @ near > q @ far + 0.2


def test_factory_builds_fake_and_shares_instances() -> None:
    cfg = EmbedderConfig(name="fake", dim=48)
    emb = build_embedder(dataclasses.replace(cfg, embed_pooling="mean"), FidelityConfig())
    assert isinstance(emb, Embedder) and emb.dim == 48
    assert build_embedder(EmbedderConfig(name="fake", dim=48)) is emb
    assert emb.name != build_embedder(EmbedderConfig(name="fake", dim=64)).name
