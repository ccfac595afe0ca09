"""Switch #10 at the factory: what the embedder is built with under its released-code switches (no model load)."""
from __future__ import annotations

import dataclasses

from atomicrag.core.config import EmbedderConfig, FidelityConfig
from atomicrag.embed import factory
from atomicrag.embed.released_instructions import glue


def test_factory_applies_pooling_and_released_instruction(monkeypatch, released_checkout):
    QUERY_TO_PASSAGE = released_checkout["query_to_passage"]  # read from the (synthetic) checkout
    seen = []
    monkeypatch.setattr(factory, "_build", lambda key, pooling: seen.append((dict(key), pooling)) or object())
    cfg = EmbedderConfig(name="transformers", model="BAAI/bge-large-en-v1.5", pooling="cls",
                         query_prefix="Represent this sentence for searching relevant passages: ")
    factory.build_embedder(cfg, FidelityConfig())
    code_cfg = dataclasses.replace(cfg, embed_pooling="mean", embed_instruction="released")
    factory.build_embedder(code_cfg, FidelityConfig(prompts="released"))
    (paper, p_pool), (code, c_pool) = seen
    assert (p_pool, paper["query_prefix"]) == ("cls", cfg.query_prefix)
    assert (c_pool, code["query_prefix"], code["passage_prefix"]) == ("mean", QUERY_TO_PASSAGE, "")


def test_instructions_are_glued_without_a_separator():
    assert glue("SYN-INSTRUCTION.", ["Paris"]) == ["SYN-INSTRUCTION.Paris"]


def test_table8_embedders_keep_their_own_recipe_unless_the_released_code_covers_them(monkeypatch, released_checkout):
    QUERY_TO_PASSAGE = released_checkout["query_to_passage"]
    """Issue 19, item 6: reference_code's mean pooling and glued instruction are the released BGE
    class's; e5, gte, gte-Qwen2 and nomic (no released encoder) keep their model card's recipe."""
    from pathlib import Path

    import yaml

    seen = {}
    monkeypatch.setattr(factory, "_build", lambda key, pooling: seen.setdefault(dict(key)["model"], (dict(key), pooling)))
    released = FidelityConfig(prompts="released")
    switches = {"embed_pooling": "mean", "embed_instruction": "released"}
    conf = Path(__file__).resolve().parents[2] / "conf" / "embedder"
    for name in ("bge_large", "bge_m3", "e5_large", "gte_large", "gte_qwen2_1.5b", "nomic_embed"):
        options = yaml.safe_load((conf / f"{name}.yaml").read_text())
        factory.build_embedder(EmbedderConfig(**options, **switches), released)
    got = {m: (pool, k["query_prefix"], k["passage_prefix"]) for m, (k, pool) in seen.items()}
    assert got["BAAI/bge-large-en-v1.5"] == ("mean", QUERY_TO_PASSAGE, "")
    assert got["BAAI/bge-m3"] == ("mean", QUERY_TO_PASSAGE, "")
    assert got["intfloat/e5-large-v2"] == ("mean", "query: ", "passage: ")
    assert got["thenlper/gte-large"] == ("mean", "", "")
    assert got["nomic-ai/nomic-embed-text-v1.5"] == ("mean", "search_query: ", "search_document: ")
    pool, query, passage = got["Alibaba-NLP/gte-Qwen2-1.5B-instruct"]
    assert pool == "auto" and query.startswith("Instruct: ") and query.endswith("\nQuery: ") and passage == ""


def test_every_model_gets_the_released_bge_recipe_when_asked(monkeypatch, released_checkout):
    """The parity run hands MiniLM to the released BGE class (mean pooling, the released
    instructions glued on); ``embedder.embed_recipe_models=all`` gives our MiniLM the same recipe,
    where by default a model whose name lacks "bge" keeps its own (no instruction)."""
    seen = {}
    monkeypatch.setattr(factory, "_build", lambda key, pooling: seen.setdefault(len(seen), (dict(key), pooling)))
    for models in ("bge", "all"):
        minilm = EmbedderConfig(name="sentence_transformers", model="minilm", pooling="auto", embed_pooling="mean",
                                embed_instruction="released", embed_recipe_models=models)
        factory.build_embedder(minilm, FidelityConfig(prompts="released"))
    (by_name, pool_by_name), (every, pool_every) = seen[0], seen[1]
    assert (by_name["query_prefix"], pool_by_name) == ("", "auto")
    assert (every["query_prefix"], pool_every) == (released_checkout["query_to_passage"], "mean")
