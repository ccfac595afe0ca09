"""The parity report's comparison: what counts as the same top-k, keep set, atoms and edges."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _parity():
    spec = importlib.util.spec_from_file_location("parity_released", ROOT / "scripts" / "parity_released.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


OURS = {"chunks": [{"position": 0, "atoms": ["a2", "a1"], "triples": [["x", "r", "y"]]}],
        "entities": ["x", "y"], "fragments": ["a1", "a2"],
        "edges": [{"type": "containment", "types": "fragment-entity", "a": "a1", "b": "x"},
                  {"type": "relevance", "types": "entity-entity", "a": "x", "b": "y"}],
        "ppr": [{"query": "q", "top": ["a1", "a2"]}, {"query": "sub", "top": ["a2"]}],
        "sieve": [{"query": "q", "candidates": ["a1", "a2"], "kept": ["a2", "a1"]}],
        "answers": [{"id": "1", "answer": "A", "raw": "Answer: A"}, {"id": "2", "answer": "B", "raw": "B"}]}
RELEASED = {"chunks": [{"position": 0, "entities": ["x"], "triples": [["x", "r", "Y"]], "fragments": ["a1", "a2"]}],
            "nodes": [{"type": "entity", "text": "x"}, {"type": "entity", "text": "Y"},
                      {"type": "fragment", "text": "a1"}, {"type": "fragment", "text": "a2"}],
            "edges": [{"types": "entity-fragment", "a": "x", "b": "a1"}, {"types": "entity-entity", "a": "Y", "b": "x"}],
            "ppr": [{"query": "q", "top": ["a2", "a1"]}],
            "sieve": [{"query": "q", "candidates": ["a1", "a2"], "kept": ["a1", "a2"]}],
            "answers": [{"id": "1", "answer": "A", "raw": "Answer: A"}, {"id": "2", "answer": "b", "raw": "b"}]}


def test_compare_counts_identity_per_stage() -> None:
    c = _parity().compare(OURS, RELEASED, 1, 25)
    assert c["atoms"]["chunks_identical"] == 1  # same atoms in another order
    assert c["triples"]["chunks_identical"] == 0 and c["triples"]["normalized"]["jaccard"] == 1.0
    assert c["graph_nodes"]["entity"]["jaccard"] == round(1 / 3, 4)
    assert c["graph_edges"]["fragment-entity"]["jaccard"] == 1.0  # undirected
    assert c["graph_edges"]["entity-entity"]["common"] == 0  # "y" vs "Y"
    ppr = c["ppr"]
    assert (ppr["matched"], ppr["identical"], ppr["mean_overlap"]) == (1, 0, 1.0)  # same set, other order
    assert ppr["per_query"][1] == {"query": "sub", "matched": False}
    assert c["sieve"]["same_kept_set"] == 1 and c["sieve"]["per_prompt"][0]["same_kept_order"] is False
    assert (c["answers"]["equal"], c["answers"]["n"]) == (1, 2)  # exact, case counts
