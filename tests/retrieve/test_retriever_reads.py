"""The declared reads of each retriever variant (``reads=`` in retrieve/registrations.py) are what
the code reads: each graph variant answers queries with a config that records every field read.

A field a variant reads but does not declare would be reset in a baseline's config and missed by
``RETRIEVERS.unread_settings``; a field it declares but never reads would be a setting that does nothing.
"""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from atomicrag import AtomicRAG
from atomicrag.core.config import RetrieverConfig
from atomicrag.core.registry import RETRIEVERS
from tests.reads_recording import recording

FIELDS = {f.name for f in dataclasses.fields(RetrieverConfig)}
DOCS = [
    {"doc_id": "curie", "title": "Marie Curie", "text": "Marie Curie was born in Warsaw. She moved to Paris in 1891."},
    {"doc_id": "warsaw", "title": "Warsaw", "text": "Warsaw is the capital of Poland."},
    {"doc_id": "pierre", "title": "Pierre Curie", "text": "Pierre Curie married Marie Curie in 1895."},
    {"doc_id": "paris", "title": "Paris", "text": "Paris is the capital of France and lies on the Seine."},
]
# settings that make the conditional reads happen (passage nodes, fusion, bridge, LLM query NER)
SETTINGS: list[dict[str, Any]] = [
    {},
    {"passage_nodes": True, "passage_ranking": "fusion", "passage_seed_weight": 0.5,
     "fusion_dense_weight": 0.5, "fusion_lexical_weight": 0.5, "lexical_weight": 0.5},
    {"passage_nodes": True, "passage_ranking": "bridge"},
    {"query_entities": "llm"},
]
GRAPH_VARIANTS = sorted(n for n in RETRIEVERS.names() if "graph" in RETRIEVERS.needs(n))


def _reads(variant: str, settings: dict[str, Any]) -> set[str]:
    rag = AtomicRAG({"llm": "fake", "embedder": "fake", "reader": {"name": "none"},
                     "retriever": {"name": variant, **settings}}, progress=False)
    rag.index(DOCS)
    rag.config.retriever, seen = recording(rag.config.retriever)  # the engine shares the library's config object
    rag._engine._retrievers.clear()  # built again from the recording config
    rag.query(["Where was Marie Curie born?", "Which river flows through the capital of France?"])
    rag.close()
    return seen


@pytest.fixture(scope="module")
def recorded() -> dict[str, set[str]]:
    return {v: set().union(*(_reads(v, s) for s in SETTINGS)) for v in GRAPH_VARIANTS}


def test_every_field_declares_its_readers() -> None:
    assert {f for f in FIELDS if RETRIEVERS.readers(f)} == FIELDS


@pytest.mark.parametrize("variant", GRAPH_VARIANTS)
def test_a_graph_variant_reads_exactly_what_it_declares(variant: str, recorded: dict[str, set[str]]) -> None:
    declared = set(RETRIEVERS.reads(variant) or ())
    assert recorded[variant] - declared == set(), "read but not declared"
    assert declared - recorded[variant] == set(), "declared but never read"


def test_dense_passage_reads_what_it_declares() -> None:
    """Vanilla RAG ranks chunks, which the library's index does not keep: read statically."""
    import atomicrag.retrieve.dense_passage as module

    tree = ast.parse(Path(module.__file__).read_text())
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in FIELDS
            and isinstance(n.value, ast.Name) and n.value.id == "rc"}
    assert read and read <= set(RETRIEVERS.reads("dense_passage") or ())


def test_a_setting_the_variant_ignores_is_named() -> None:
    assert RETRIEVERS.unread_settings(RetrieverConfig(name="ppr", katz_beta=0.5)) == ["katz_beta (read by katz)"]
    assert RETRIEVERS.unread_settings(RetrieverConfig(name="katz", katz_beta=0.5)) == []


def test_a_plugin_without_declared_reads_reads_everything() -> None:
    from atomicrag.core.registry import Registry

    plugins = Registry("retriever")
    plugins.register("mine", object())
    assert plugins.reads("mine") is None
