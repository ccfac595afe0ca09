"""The real offline encoder (all-MiniLM-L6-v2 from its package): shapes, norms, ranking, pooling."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from atomicrag.core.config import EmbedderConfig, FidelityConfig
from atomicrag.embed import build_embedder
from atomicrag.embed.encoders import SentenceTransformerEmbedder, TransformersEmbedder
from tests.marks import MINILM, needs

pytestmark = [
    # importing sentence-transformers alone takes 10-30 s on a 2-core machine
    pytest.mark.slow,
    needs(MINILM, "sentence_transformers"),
]

QUERY = "Who directed the movie No Greater Glory?"
TEXTS = ["No Greater Glory is a 1934 film that was directed by Frank Borzage.",
         "The stock market fell sharply on Tuesday after the bank raised interest rates."]


@pytest.fixture(scope="module")
def st() -> SentenceTransformerEmbedder:
    emb = build_embedder(EmbedderConfig(name="sentence_transformers", model="minilm", device="cpu"))
    assert isinstance(emb, SentenceTransformerEmbedder)
    return emb


def test_minilm_dim_norm_and_ranking(st: SentenceTransformerEmbedder) -> None:
    docs = st.encode(TEXTS)
    q = st.encode([QUERY], is_query=True)
    assert st.dim == 384 and docs.shape == (2, 384) and docs.dtype == torch.float32 and docs.device.type == "cpu"
    assert torch.allclose(docs.norm(dim=1), torch.ones(2), atol=1e-4)
    sims = (q @ docs.T)[0]
    assert sims[0] > sims[1] + 0.3
    assert "all-MiniLM-L6-v2" in st.name and "pool=mean" in st.name and "len=256" in st.name
    assert st.encode([]).shape == (0, 384)


# the largest element difference two correct implementations of one encoder show, by the type
# they run in: fp32 agrees to rounding; bf16 (what `auto` picks on a CPU with native bf16) keeps
# 8 bits of mantissa, and the two paths batch and reduce differently (seen: ~6e-4)
ATOL = {"fp32": 1e-4, "bf16": 4e-3, "fp16": 2e-3}


def test_transformers_mean_pooling_matches_sentence_transformers(st: SentenceTransformerEmbedder) -> None:
    hf = TransformersEmbedder("minilm", pooling="auto", device="cpu", batch_size=1)
    assert hf.pooling == "mean"  # read from the model's 1_Pooling/config.json
    a, b = st.encode(TEXTS + [QUERY]), hf.encode(TEXTS + [QUERY])
    assert torch.allclose(a, b, atol=ATOL[hf.precision]), (hf.precision, (a - b).abs().max())
    assert torch.nn.functional.cosine_similarity(a, b).min() > (0.9999 if hf.precision == "fp32" else 0.999)
    cls = TransformersEmbedder("minilm", pooling="cls", device="cpu")
    assert cls.name != hf.name and not torch.allclose(cls.encode(TEXTS), a[:2], atol=1e-2)


def test_prefix_only_on_the_configured_side() -> None:
    emb = TransformersEmbedder("minilm", query_prefix="query: ", device="cpu")
    plain = TransformersEmbedder("minilm", device="cpu")
    assert torch.allclose(emb.encode(TEXTS), plain.encode(TEXTS), atol=1e-5)
    assert not torch.allclose(emb.encode(TEXTS, is_query=True), plain.encode(TEXTS, is_query=True), atol=1e-3)
    assert emb.name != plain.name and "qp=" in emb.name and "pp=" not in emb.name


@pytest.fixture
def covered(monkeypatch):
    """minilm stands in for a bge model: the switches apply only to models the released code covers."""
    from atomicrag.embed import factory

    monkeypatch.setattr(factory, "released_code_covers", lambda cfg: True)


def test_fidelity_switch_forces_mean_pooling(covered) -> None:
    cfg = EmbedderConfig(name="transformers", model="minilm", pooling="cls", device="cpu")
    assert build_embedder(cfg).pooling == "cls"
    assert build_embedder(dataclasses.replace(cfg, embed_pooling="mean")).pooling == "mean"


def test_released_pooling_and_instruction_change_the_query_embedding(covered, released_checkout) -> None:
    """Switch #10: mean pooling and the released instruction (from the checkout) glued on with no separator."""
    QUERY_TO_PASSAGE = released_checkout["query_to_passage"]

    base = EmbedderConfig(name="transformers", model="minilm", pooling="cls", device="cpu",
                          query_prefix="query: ")
    model = build_embedder(base, FidelityConfig())
    code = build_embedder(dataclasses.replace(base, embed_pooling="mean", embed_instruction="released"),
                          FidelityConfig(prompts="released"))
    assert (model.pooling, model.query_prefix) == ("cls", "query: ")
    assert (code.pooling, code.query_prefix, code.passage_prefix) == ("mean", QUERY_TO_PASSAGE, "")
    q_model, q_code = model.encode([QUERY], is_query=True), code.encode([QUERY], is_query=True)
    assert (q_model @ q_code.T).item() < 0.99  # a different vector for the same question
    glued = build_embedder(EmbedderConfig(name="transformers", model="minilm", pooling="mean", device="cpu"))
    torch.testing.assert_close(code.encode([QUERY], is_query=True), glued.encode([QUERY_TO_PASSAGE + QUERY]))


@pytest.mark.parametrize("cls", [SentenceTransformerEmbedder, TransformersEmbedder])
def test_sequence_length_is_clamped_to_the_models_positions(cls) -> None:
    # bge-large's config asks for 2048 over a 512-position table: unclamped, a long input is a
    # CUDA device-side assert. MiniLM (512 positions; its tokenizer declares 256) stands in offline.
    emb = cls("minilm", max_length=2048, device="cpu")
    assert emb.max_length <= 512
    assert f"len={emb.max_length}" in emb.name
    long_text = "word " * 3000  # ~3000 tokens: runs only when truncated to the table
    assert emb.encode([long_text]).shape == (1, emb.dim)
