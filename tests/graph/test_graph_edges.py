"""Containment / relevance / synonym edges and weights on a hand-made corpus."""
from __future__ import annotations

import pytest
import torch

from atomicrag.core.config import GraphConfig
from atomicrag.core.schemas import AtomizeResult, ChunkFailure
from atomicrag.graph.build import build_graph
from atomicrag.graph.canon import canonical_key
from atomicrag.graph.synonyms import synonym_edges

from .helpers import VECTORS, TableEmbedder, corpus

P, F, E, EU, US = range(5)  # entity node ids
A0, A1, A2, A3 = 5, 6, 7, 8  # atom node ids


def pairs(edges) -> dict[tuple[int, int], float]:
    return {(int(s), int(d)): round(float(w), 4) for s, d, w in zip(edges.src, edges.dst, edges.weight)}


def build(**fid) -> object:
    return build_graph(corpus(), TableEmbedder(VECTORS), GraphConfig(**fid))


def dense(g) -> torch.Tensor:
    return g.adjacency.to_dense()


def test_canonical_key():
    assert canonical_key("  St. Maurice's   Abbey ") == "st maurice s abbey"
    assert canonical_key("Gödel_Escher-Bach") == "gödel escher bach"


def test_nodes_and_containment_canonical():
    g = build()
    assert g.entity_keys == ["paris", "france", "eiffel tower", "euro", "us"]
    assert g.entity_texts[0] == "Paris"
    assert pairs(g.edges["containment"]) == {
        (P, A0): 1.0, (F, A0): 1.0, (E, A1): 1.0, (P, A1): 1.0, (F, A2): 1.0, (EU, A2): 1.0, (US, A3): 1.0}
    assert g.meta["containment_mentions_dropped"] == 0


def test_containment_raw_reproduces_the_reference_code_bug():
    g = build(containment_keys="raw")
    # only mentions already equal to their canonical key link: "paris" (atom 1) and "euro" (atom 2)
    assert pairs(g.edges["containment"]) == {(P, A1): 1.0, (EU, A2): 1.0}
    assert g.meta["containment_mentions_dropped"] == 5
    # the entity nodes themselves are the same as under canonical keys
    assert g.entity_keys == build().entity_keys


def test_relevance_distinct_relations_vs_occurrences():
    paper = pairs(build().edges["relevance"])
    code = pairs(build(relevance_weight="occurrences").edges["relevance"])
    # paris-france: labels {capital of, largest city of} -> 2; three triples -> 3
    assert paper == {(P, F): 2.0, (P, E): 1.0, (F, EU): 1.0, (F, US): 1.0}
    assert code == {(P, F): 3.0, (P, E): 1.0, (F, EU): 1.0, (F, US): 1.0}


def test_synonym_edges_threshold_and_min_alnum():
    g = build()
    # paris-eiffel tower at 0.9; france-us has cosine 1 but "us" has < 4 alphanumeric characters
    assert pairs(g.edges["synonym"]) == {(P, E): 0.9}


def test_synonym_and_relevance_summed_in_paper_mode():
    g = build()
    adj = dense(g)
    assert adj[P, E].item() == pytest.approx(1.9) and adj[E, P].item() == pytest.approx(1.9)
    assert (P, E) in pairs(g.edges["relevance"])


def test_synonym_overwrites_relevance_in_code_mode():
    g = build(synonym_overwrites_relevance=True)
    assert (P, E) not in pairs(g.edges["relevance"])
    assert dense(g)[P, E].item() == pytest.approx(0.9)
    assert g.meta["relevance_overwritten_by_synonym"] == 1


def test_adjacency_is_symmetric_without_self_loops():
    g = build()
    adj = dense(g)
    assert g.adjacency.layout == torch.sparse_csr and adj.dtype == torch.float32
    assert torch.equal(adj, adj.T) and torch.all(adj.diagonal() == 0)
    assert adj[P, F].item() == 2.0 and adj[A0, P].item() == 1.0
    n_pairs = sum(len(e) for e in g.edges.values())  # no pair shared between types except P-E
    assert int((adj > 0).sum()) == 2 * (n_pairs - 1)


def test_triples_only_entity_nodes():
    res = corpus()
    res.triples = [t for t in res.triples if t.object != "euro"]
    g = build_graph(res, TableEmbedder(VECTORS), GraphConfig(entity_nodes="triples_only"))
    assert "euro" not in g.entity_keys
    g_all = build_graph(res, TableEmbedder(VECTORS), GraphConfig(entity_nodes="all"))
    assert "euro" in g_all.entity_keys


def test_embeddings_are_normalised_and_passage_side():
    emb = TableEmbedder({"Paris": [2.0, 0.0, 0.0, 0.0]})
    g = build_graph(corpus(), emb, GraphConfig())
    assert g.atom_embeddings.shape == (4, 4) and g.entity_embeddings.shape == (5, 4)
    assert torch.allclose(g.entity_embeddings.norm(dim=1), torch.ones(5))
    assert emb.calls[0] == [a.text for a in corpus().atoms] and emb.calls[1] == g.entity_texts


def test_knn_cap_union_and_blocking():
    x = torch.tensor([[1.0, 0.0], [0.95, 0.3122499], [0.9, -0.4358899]])
    keys = ["aaaa", "bbbb", "cccc"]
    for batch in (1, 2, 4096):
        e = synonym_edges(keys, x, threshold=0.8, max_neighbors=1, min_alnum=4, batch=batch)
        assert pairs(e) == {(0, 1): 0.95, (0, 2): 0.9}
        e = synonym_edges(keys, x, threshold=0.7, max_neighbors=1, min_alnum=4, batch=batch)
        assert pairs(e) == {(0, 1): 0.95, (0, 2): 0.9}  # (1, 2) is nobody's top-1
        e = synonym_edges(keys, x, threshold=0.7, max_neighbors=2, min_alnum=4, batch=batch)
        assert pairs(e) == {(0, 1): 0.95, (0, 2): 0.9, (1, 2): 0.7189}


def test_structure_only_without_embedder():
    g = build_graph(corpus(), None, GraphConfig())
    assert g.atom_embeddings is None and len(g.edges["synonym"]) == 0


def test_zero_atoms_is_a_clear_error():
    res = AtomizeResult(atoms=[], failures=[ChunkFailure("c0", "extraction", "no JSON")])
    with pytest.raises(ValueError, match="zero atoms.*1 chunks failed"):
        build_graph(res, None, GraphConfig())


def test_embedder_dimension_mismatch_is_a_clear_error():
    bad = TableEmbedder(VECTORS, dim=8)  # declares 8, returns 4-dimensional rows from the table
    with pytest.raises(ValueError, match="declares dim=8"):
        build_graph(corpus(), bad, GraphConfig())


@pytest.mark.gpu
def test_knn_on_cuda_matches_cpu():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3000, 32, generator=g)
    x[1::2] = x[::2] + 0.2 * torch.randn(1500, 32, generator=g)  # near-duplicate pairs
    keys = [f"entity {i}" for i in range(3000)]
    cpu = synonym_edges(keys, x, threshold=0.8, max_neighbors=5, min_alnum=4, batch=512, device="cpu")
    gpu = synonym_edges(keys, x, threshold=0.8, max_neighbors=5, min_alnum=4, batch=512, device="cuda")
    assert torch.equal(cpu.src, gpu.src) and torch.equal(cpu.dst, gpu.dst)
    assert torch.allclose(cpu.weight, gpu.weight, atol=1e-4)
