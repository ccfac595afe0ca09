"""insert/delete give the index a fresh build gives, while re-doing only the work that changed."""
from __future__ import annotations

import random
from typing import Any

import pytest

from atomicrag import AtomicRAG
from atomicrag.core.compose import load_config
from atomicrag.core.schemas import AtomizeResult
from atomicrag.graph.build import build_graph

from .conftest import DOCS, base_config
from .helpers import assert_same_graph, assert_same_results


def fresh(cfg: dict[str, Any], docs: list[dict[str, Any]]) -> AtomicRAG:
    return AtomicRAG(cfg, progress=False).index(docs)


def test_library_index_equals_build_graph(cfg: dict[str, Any]) -> None:
    """The library's own graph assembly is the research pipeline's build_graph, edge for edge."""
    rag = fresh(cfg, DOCS)
    g = rag.graph
    triples = [t for d in rag.documents for t in rag._states[d.id].triples]
    c = load_config(cfg)
    ref = build_graph(AtomizeResult(atoms=list(g.atoms), triples=triples), rag.embedder, c.graph)
    assert_same_graph(g, ref)
    assert len(g.edges["synonym"]) > 10  # the corpus really exercises synonym edges and the cap


def _random_sequence(cfg: dict[str, Any], seed: int, steps: int = 6) -> None:
    rng = random.Random(seed)
    pool = list(DOCS)
    rng.shuffle(pool)
    current = pool[:8]
    rest = pool[8:]
    rag = fresh(cfg, current)
    for step in range(steps):
        if rest and (rng.random() < 0.55 or len(current) < 4):
            batch = [rest.pop() for _ in range(min(len(rest), rng.randint(1, 3)))]
            rag.insert(batch)
            current += batch
        else:
            gone = rng.sample(current, rng.randint(1, 3))
            rag.delete([d["doc_id"] for d in gone])
            current = [d for d in current if d not in gone]
        ref = fresh(cfg, current)
        assert [d.id for d in rag.documents] == [d["doc_id"] for d in current]
        assert_same_graph(rag.graph, ref.graph)
        if step % 2 or step == steps - 1:
            assert_same_results(rag, ref)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_insert_delete_sequences_equal_fresh_index(cfg: dict[str, Any], seed: int) -> None:
    _random_sequence(cfg, seed)


@pytest.mark.parametrize("variant", [
    # LLM atoms with triples (fake LLM): relevance edges, entities first seen in triples, surface
    # forms that change when the first document mentioning an entity goes away
    {"atomizer": {"name": "llm"}},
    {"atomizer": {"name": "llm"}, "graph": {"synonym_overwrites_relevance": True,
                                            "entity_nodes": "triples_only", "relevance_weight": "occurrences"}},
    # corpus-level atomizer: updates re-atomize everything but still reuse embeddings
    {"atomizer": {"name": "vocabulary", "vocab_llm_filter": False, "vocab_min_freq": 2}},
])
def test_sequences_with_other_atomizers(variant: dict[str, Any]) -> None:
    _random_sequence(base_config(**variant), seed=5, steps=4)


def test_insert_embeds_only_new_texts_and_updates_synonyms_locally(cfg: dict[str, Any]) -> None:
    rag = fresh(cfg, DOCS[:-1])
    before = rag.graph.num_entities
    rag.insert(DOCS[-1])
    upd = rag.graph.meta["last_update"]
    new_atoms = [a for a in rag.graph.atoms if a.passage_id == DOCS[-1]["doc_id"]]
    assert upd["incremental"] is True
    assert upd["new_atom_texts"] == len({a.text for a in new_atoms})
    assert upd["new_entity_texts"] == rag.graph.num_entities - before
    assert upd["synonym_rows_computed"] <= upd["new_entity_texts"] + 5  # not all entities
    rag.delete(DOCS[-1]["doc_id"])
    assert rag.graph.meta["last_update"]["new_atom_texts"] == 0


def test_unknown_synonym_rows_are_recomputed(cfg: dict[str, Any]) -> None:
    """An index whose directed synonym rows are unknown (loaded from PostgreSQL) still updates exactly."""
    rag = fresh(cfg, DOCS[:12])
    rag._indexed.rows = None
    rag.insert(DOCS[12:15])
    rag._indexed.rows = None
    rag.delete(["curie", "vienna"])
    assert_same_graph(rag.graph, fresh(cfg, [d for d in DOCS[:15] if d["doc_id"] not in ("curie", "vienna")]).graph)


def test_replace_and_delete_everything(cfg: dict[str, Any]) -> None:
    rag = fresh(cfg, DOCS[:5])
    rag.insert({"doc_id": "warsaw", "text": "Warsaw lies on the Vistula River in Poland."}, replace=True)
    ids = [d.id for d in rag.documents]
    assert ids[-1] == "warsaw" and ids.count("warsaw") == 1  # replaced documents move to the end
    expected = [d for d in DOCS[:5] if d["doc_id"] != "warsaw"]
    expected.append({"doc_id": "warsaw", "text": "Warsaw lies on the Vistula River in Poland."})
    assert_same_graph(rag.graph, fresh(cfg, expected).graph)
    assert rag.delete(ids) == 5
    assert rag.graph is None and len(rag) == 0
    with pytest.raises(RuntimeError, match="empty"):
        rag.query("anything")
    rag.insert(DOCS[:3])  # from empty again
    assert_same_graph(rag.graph, fresh(cfg, DOCS[:3]).graph)


@pytest.mark.parametrize("candidates", ["both_ends", "source_only"])
@pytest.mark.parametrize("cap", [1, 3, 100])
def test_synonym_rows_update_equals_full_knn(cap: int, candidates: str) -> None:
    """Random deletes, inserts and reorderings of clustered entities (so rows fill up to the cap
    and lose neighbours): the updated rows give exactly synonym_edges' edge set, and the same
    directed rows as a computation from nothing; under source_only the short entities (no row of
    their own) still join the rows of the long ones as they come and go."""
    import torch

    from atomicrag.core.config import GraphConfig
    from atomicrag.graph.incremental import rows_to_edges, update_synonym_rows
    from atomicrag.graph.synonyms import synonym_edges

    from .helpers import edge_map

    gen = torch.Generator().manual_seed(cap)
    rng = random.Random(cap)
    gcfg = GraphConfig(synonym_threshold=0.5, synonym_max_neighbors=cap, synonym_min_alnum=4, synonym_batch=7)
    pool = [f"entity {i:03d}" if i % 7 else f"e{i}" for i in range(160)]  # every 7th is too short
    centers = torch.randn(8, 16, generator=gen)
    vec = {k: centers[i % 8] + 0.6 * torch.randn(16, generator=gen) for i, k in enumerate(pool)}
    cur = rng.sample(pool, 50)
    rows, _ = update_synonym_rows(None, torch.zeros(0, dtype=torch.int64), cur,
                                  torch.stack([vec[k] for k in cur]), torch.ones(len(cur), dtype=torch.bool), gcfg,
                                  candidates)
    short_neighbours = 0
    for step in range(25):
        new = [k for k in cur if rng.random() > 0.12]
        new += rng.sample([k for k in pool if k not in new], rng.randint(0, 8))
        if step % 6 == 0:
            rng.shuffle(new)
        pos = {k: j for j, k in enumerate(new)}
        old_to_new = torch.tensor([pos.get(k, -1) for k in cur], dtype=torch.int64)
        fresh_mask = torch.ones(len(new), dtype=torch.bool)
        fresh_mask[old_to_new[old_to_new >= 0]] = False
        emb = torch.stack([vec[k] for k in new])
        rows, _ = update_synonym_rows(rows, old_to_new, new, emb, fresh_mask, gcfg, candidates)
        got = edge_map(rows_to_edges(rows, len(new)))
        ref = edge_map(synonym_edges(new, emb, threshold=0.5, max_neighbors=cap, min_alnum=4, batch=7,
                                     candidates=candidates))
        assert got.keys() == ref.keys(), (step, sorted(set(got) ^ set(ref)))
        assert all(abs(got[k] - ref[k]) < 1e-5 for k in got)
        full, _ = update_synonym_rows(None, torch.zeros(0, dtype=torch.int64), new, emb,
                                      torch.ones(len(new), dtype=torch.bool), gcfg, candidates)
        directed = set(zip(rows.src.tolist(), rows.dst.tolist()))
        assert directed == set(zip(full.src.tolist(), full.dst.tolist())), step
        assert all(len(new[s]) >= 4 for s, _ in directed)  # only long entities have rows
        short_neighbours += sum(len(new[d]) < 4 for _, d in directed)
        cur = new
    # the short entities are neighbours exactly when the released rule says so
    assert (short_neighbours > 0) == (candidates == "source_only")
