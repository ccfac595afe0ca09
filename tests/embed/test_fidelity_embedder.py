"""Switch #10 at the factory: what the embedder is built with under each fidelity (no model load)."""
from __future__ import annotations

from atomicrag.core.config import EmbedderConfig, FidelityConfig
from atomicrag.embed import factory
from atomicrag.embed.released_instructions import QUERY_TO_NODE, QUERY_TO_PASSAGE, glue


def test_factory_applies_pooling_and_released_instruction(monkeypatch):
    seen = []
    monkeypatch.setattr(factory, "_build", lambda key, pooling: seen.append((dict(key), pooling)) or object())
    cfg = EmbedderConfig(name="transformers", model="BAAI/bge-large-en-v1.5", pooling="cls",
                         query_prefix="Represent this sentence for searching relevant passages: ")
    factory.build_embedder(cfg, FidelityConfig())
    factory.build_embedder(cfg, FidelityConfig(embed_pooling="mean", embed_instruction="released"))
    (paper, p_pool), (code, c_pool) = seen
    assert (p_pool, paper["query_prefix"]) == ("cls", cfg.query_prefix)
    assert (c_pool, code["query_prefix"], code["passage_prefix"]) == ("mean", QUERY_TO_PASSAGE, "")


def test_instructions_are_glued_without_a_separator():
    assert glue(QUERY_TO_NODE, ["Paris"]) == [QUERY_TO_NODE + "Paris"]
    assert QUERY_TO_PASSAGE.endswith("question.") and not QUERY_TO_PASSAGE.endswith(" ")
