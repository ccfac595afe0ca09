"""The released code's unlisted differences, part of fidelity=reference_code, each on its own field."""
from __future__ import annotations

import dataclasses

import pytest

from atomicrag.core.config import GraphConfig
from atomicrag.core.schemas import Atom, AtomizeResult, Triple
from atomicrag.graph.build import build_graph
from atomicrag.graph.released_code import dedupe_triples_per_chunk, merge_identical_atoms, prepare_for_graph

from .helpers import VECTORS, TableEmbedder, corpus

P, F, E, EU, US = range(5)  # entity node ids of helpers.corpus()


def pairs(edges) -> dict[tuple[int, int], float]:
    return {(int(s), int(d)): round(float(w), 4) for s, d, w in zip(edges.src, edges.dst, edges.weight)}


def build(res: AtomizeResult | None = None, emb: TableEmbedder | None = None, **fid):
    return build_graph(res or corpus(), emb or TableEmbedder(VECTORS), GraphConfig(**fid))


def test_triples_deduplicated_within_a_chunk():
    res = corpus()
    res.triples.append(Triple("Paris", "capital of", "France", "c0"))  # the LLM repeated a triple in c0
    res.triples.append(Triple("Paris", "capital of", "France", "c9"))  # another chunk: a real occurrence
    as_is = pairs(build(res, relevance_weight="occurrences").edges["relevance"])
    deduped = pairs(build(res, relevance_weight="occurrences", triple_dedupe="per_chunk").edges["relevance"])
    assert as_is[(P, F)] == 5.0 and deduped[(P, F)] == 4.0
    assert dedupe_triples_per_chunk([Triple("a", "r", "b", "c")] * 3) == [Triple("a", "r", "b", "c")]


def test_one_way_synonyms_weigh_half_a_mutual_one():
    import torch

    from atomicrag.graph.incremental import SynonymRows
    from atomicrag.graph.released_code import directed_rows_to_edges

    # paris <-> eiffel tower find each other (0.9 both ways): a mutual pair keeps its cosine
    assert pairs(build().edges["synonym"]) == pairs(build(synonym_direction="directed").edges["synonym"]) == {
        (P, E): 0.9}
    # rows 0->1 and 1->0 (mutual), 2->3 only (one-way): the one-way edge gets half its cosine
    rows = SynonymRows(torch.tensor([0, 1, 2]), torch.tensor([1, 0, 3]), torch.tensor([0.9, 0.9, 0.8]))
    assert pairs(directed_rows_to_edges(rows, 4)) == {(0, 1): 0.9, (2, 3): 0.4}


def test_a_short_entity_may_be_the_neighbour_of_a_long_one_as_released():
    """France ~ US (cosine 1): "us" is too short to search for neighbours of its own, but under
    synonym_candidates=source_only it is found as France's neighbour (a one-way edge)."""
    assert pairs(build().edges["synonym"]) == {(P, E): 0.9}
    released = pairs(build(synonym_candidates="source_only").edges["synonym"])
    assert released == {(P, E): 0.9, (F, US): 1.0}
    # with the released one-way weighting the edge France -> us counts half
    assert pairs(build(synonym_candidates="source_only", synonym_direction="directed").edges["synonym"]) == {
        (P, E): 0.9, (F, US): 0.5}


def test_a_one_way_synonym_overwrites_one_direction_of_the_relevance_edge():
    """France -> us is a one-way synonym (source_only; cosine 1) over a relevance pair (weight 1).
    Released, the synonym entry replaces the relevance entry of its own direction only: the pair
    keeps half its relevance weight beside half the cosine. A mutual synonym pair (paris <-> eiffel
    tower) keeps no relevance weight."""
    released = {"synonym_candidates": "source_only", "synonym_direction": "directed",
                "synonym_overwrites_relevance": True}
    g = build(**released)
    assert pairs(g.edges["synonym"])[(F, US)] == 0.5 and pairs(g.edges["relevance"])[(F, US)] == 0.5
    assert (P, E) not in pairs(g.edges["relevance"]) and (E, P) not in pairs(g.edges["relevance"])
    assert pairs(build(**{**released, "synonym_candidates": "both_ends"}).edges["relevance"])[(F, US)] == 1.0
    # undirected synonyms keep the whole-pair rule
    mutual = build(synonym_candidates="source_only", synonym_overwrites_relevance=True)
    assert (F, US) not in pairs(mutual.edges["relevance"])


def test_entity_embeddings_of_the_processed_string():
    surface, canonical = TableEmbedder(VECTORS), TableEmbedder(VECTORS)
    build(emb=surface)
    build(emb=canonical, entity_embedding_text="canonical")
    assert ["Paris", "France", "Eiffel Tower", "euro", "US"] in surface.calls
    assert ["paris", "france", "eiffel tower", "euro", "us"] in canonical.calls


def test_identical_atom_texts_are_one_node():
    res = corpus()
    dup = Atom(id="c9#a0", text="France uses the euro.", chunk_id="c9", passage_id="p9", entities=["EU", "France"])
    res = dataclasses.replace(res, atoms=res.atoms + [dup])
    kept = build(res)
    merged = build(res, atom_merge="identical_text")
    assert kept.num_atoms == 5 and merged.num_atoms == 4
    node = next(a for a in merged.atoms if a.text == "France uses the euro.")
    assert node.id == "c1#a2" and node.passage_id == "p1"  # the first occurrence's identity
    assert node.entities == ["France", "euro", "EU"]  # the union, in order
    assert merge_identical_atoms(res.atoms)[2].entities == ["France", "euro", "EU"]
    assert res.atoms[2].entities == ["France", "euro"]  # the input is not modified


def test_paper_fidelity_leaves_the_extraction_untouched():
    res = corpus()
    assert prepare_for_graph(res, GraphConfig()) is res
    ref = prepare_for_graph(res, GraphConfig(triple_dedupe="per_chunk", atom_merge="identical_text"))
    assert ref.stats["reference_prepare"] == {"triples_dropped": 0, "atoms_merged": 0}


def test_reference_code_preset_changes_the_graph_paper_does_not():
    from atomicrag.core.compose import HARNESS_ROOT, load_config
    from atomicrag.core.config_moves import MOVED_FIELDS

    ref = load_config({"fidelity": "reference_code"}, env_prefix=None, root=HARNESS_ROOT)
    paper = load_config({"fidelity": "paper"}, env_prefix=None, root=HARNESS_ROOT)
    # the paper preset is every section's dataclass default: behaviour unchanged
    assert paper == load_config(None, env_prefix=None, root=HARNESS_ROOT)
    for field, value in {"triple_dedupe": "per_chunk", "synonym_direction": "directed",
                         "synonym_candidates": "source_only",
                         "entity_embedding_text": "canonical", "entity_link_fallback": "best",
                         "reader_context": "wikipedia_title", "atom_merge": "identical_text",
                         "embed_instruction": "released", "judge_failures": "released"}.items():
        section = MOVED_FIELDS.get(("fidelity", field), "fidelity")  # the stage section that owns it
        assert getattr(getattr(ref, section), field) == value, field
        assert getattr(getattr(paper, section), field) != value, field
    with pytest.raises(ValueError, match="synonym_direction"):
        GraphConfig(synonym_direction="both")
