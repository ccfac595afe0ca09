"""retrieve/seeds.py: entity linking, atom seeds under both fidelities (switch #2), the released
code's best-entity fallback, its query-to-node instruction (switch #10) and HNSW top-k (switch #11)."""
from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from atomicrag.core.config import EmbedderConfig, FidelityConfig, RetrieverConfig
from atomicrag.core.schemas import Atom
from atomicrag.embed.factory import query_to_node
from atomicrag.graph.structure import AtomEntityGraph
from atomicrag.retrieve.seeds import atom_seed_weights, build_seeds, link_entities


def graph(entity_vecs: list[list[float]], atom_vecs: list[list[float]]) -> AtomEntityGraph:
    ents = [f"e{i}" for i in range(len(entity_vecs))]
    atoms = [Atom(id=f"a{i}", text=f"atom {i}", chunk_id="c", passage_id="p") for i in range(len(atom_vecs))]
    n = len(ents) + len(atoms)
    adj = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (n, n)).to_sparse_csr()
    return AtomEntityGraph(entity_keys=ents, entity_texts=ents, atoms=atoms, edges={}, adjacency=adj,
                           atom_embeddings=F.normalize(torch.tensor(atom_vecs), dim=1),
                           entity_embeddings=F.normalize(torch.tensor(entity_vecs), dim=1))


class Table:
    """encode(texts) from a table of known vectors; records what it was asked."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table, self.seen = table, []

    def __call__(self, texts: list[str]) -> torch.Tensor:
        self.seen.extend(texts)
        return F.normalize(torch.tensor([self.table[t] for t in texts]), dim=1)


G = graph([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.8, 0.0]], [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])


def test_entity_linking_threshold_top_k_and_max_over_query_entities():
    enc = Table({"x": [1.0, 0.0, 0.0], "y": [0.0, 1.0, 0.0]})
    cfg = RetrieverConfig(entity_sim_threshold=0.7, entity_top_k=2)
    [seeds] = link_entities([["x", "y"]], G, enc, cfg)
    # e0 = 1.0 (x), e1 = 1.0 (y), e2 = max(0.6, 0.8) = 0.8, top-2 of those
    assert [e for e, _ in seeds] == [0, 1] or [e for e, _ in seeds] == [1, 0]
    assert all(w == pytest.approx(1.0) for _, w in seeds)
    [seeds] = link_entities([["x", "y"]], G, enc, RetrieverConfig(entity_sim_threshold=0.7, entity_top_k=5))
    assert dict(seeds)[2] == pytest.approx(0.8)
    assert link_entities([[]], G, enc, cfg) == [[]]


def test_best_entity_fallback_when_none_passes():
    enc = Table({"z": [0.5, 0.0, 0.866]})  # cos 0.5 to e0, 0.3 to e2, 0 to e1
    cfg = RetrieverConfig(entity_sim_threshold=0.9)
    assert link_entities([["z"]], G, enc, cfg) == [[]]  # paper: nothing passes, no entity seed
    [seeds] = link_entities([["z"]], G, enc, cfg, fallback="best")  # released code: the best one anyway
    assert len(seeds) == 1 and seeds[0][0] == 0 and seeds[0][1] == pytest.approx(0.5, abs=1e-4)
    # with an entity above the threshold the fallback changes nothing
    enc2 = Table({"x": [1.0, 0.0, 0.0]})
    assert link_entities([["x"]], G, enc2, cfg, fallback="best") == link_entities([["x"]], G, enc2, cfg)


def test_atom_seeds_topk_vs_all_minmax():
    sim = torch.tensor([[0.9, -0.2, 0.5, 0.1]])  # [Q=1, A=4]
    cfg = RetrieverConfig(atom_seed_weight=0.1, atom_seed_top_k=2)
    idx, val = atom_seed_weights(sim, dataclasses.replace(cfg, atom_seeding="topk"))
    assert idx[1].tolist() == [0, 2] and val.tolist() == pytest.approx([0.09, 0.05])
    idx, val = atom_seed_weights(sim, dataclasses.replace(cfg, atom_seeding="all_minmax"))
    # every atom, alpha * (s - min) / (max - min): the released code's seeding
    assert idx[1].tolist() == [0, 1, 2, 3]
    assert val.tolist() == pytest.approx([0.1, 0.0, 0.1 * 0.7 / 1.1, 0.1 * 0.3 / 1.1])
    idx, val = atom_seed_weights(sim, RetrieverConfig(atom_seed_weight=0.0))
    assert idx.shape == (2, 0)


def test_negative_cosines_never_subtract_mass():
    sim = torch.tensor([[-0.3, -0.5]])
    _, val = atom_seed_weights(sim, RetrieverConfig(atom_seed_top_k=2, atom_seeding="topk"))
    assert (val >= 0).all()


def test_build_seeds_matrix_layout_and_mass_split():
    enc = Table({"x": [1.0, 0.0, 0.0]})
    q = F.normalize(torch.tensor([[0.3, 1.0, 0.0]]), dim=1)  # most like atom 2, a little like atom 0
    cfg = RetrieverConfig(entity_sim_threshold=0.9, atom_seed_weight=0.1, atom_seed_top_k=1)
    s = build_seeds(G, q, [["x"]], enc, dataclasses.replace(cfg, atom_seeding="topk")).matrix.to_dense()
    assert s.shape == (1, 6)
    assert s[0, 0] == pytest.approx(1.0)  # entity e0, weight = cosine
    cos2 = (q[0] @ G.atom_embeddings[2]).item()
    assert s[0, 3 + 2] == pytest.approx(0.1 * cos2) and s[0, 3:5].abs().sum() == 0  # atoms follow the entities
    ref = build_seeds(G, q, [["x"]], enc, dataclasses.replace(cfg, atom_seeding="all_minmax")).matrix.to_dense()
    assert (ref[0, 3:] > 0).sum() == 2  # every atom but the least similar carries mass


def test_released_query_to_node_instruction_is_glued_on(released_checkout):
    to_node = released_checkout["query_to_node"]  # read from the (synthetic) checkout
    enc = Table({"x": [1.0, 0.0, 0.0], to_node + "x": [0.0, 1.0, 0.0]})
    q = F.normalize(torch.tensor([[1.0, 0.0, 0.0]]), dim=1)
    cfg = RetrieverConfig(entity_sim_threshold=0.9, atom_seed_weight=0.0)
    plain = build_seeds(G, q, [["x"]], enc, cfg)
    released_embedder = EmbedderConfig(embed_instruction="released", embed_recipe_models="all")
    to_node_text = query_to_node(released_embedder, FidelityConfig(prompts="released"))
    released = build_seeds(G, q, [["x"]], enc, cfg, to_node_text)
    assert enc.seen == ["x", to_node + "x"]  # no separator between instruction and text
    assert [e for e, _ in plain.entity_seeds[0]] == [0] and [e for e, _ in released.entity_seeds[0]] == [1]


def test_faiss_hnsw_seeds_come_from_the_index(monkeypatch):
    pytest.importorskip("faiss")
    from atomicrag.retrieve import ann

    gen = torch.Generator().manual_seed(0)
    atoms = F.normalize(torch.randn(3000, 16, generator=gen), dim=1)
    g = graph([[1.0] + [0.0] * 15], atoms.tolist())
    qs = F.normalize(torch.randn(40, 16, generator=gen), dim=1)
    cfg = RetrieverConfig(atom_seed_top_k=25)
    exact = build_seeds(g, qs, [[] for _ in range(40)], Table({}), cfg)
    monkeypatch.setattr(ann, "EF_SEARCH", 4)  # a deliberately narrow search: approximate for sure
    monkeypatch.setattr(ann, "_cache", {})
    approx = build_seeds(g, qs, [[] for _ in range(40)], Table({}), dataclasses.replace(cfg, vector_index="faiss"))
    ex = {tuple(x) for x in exact.matrix.indices().T.tolist()}
    ap = {tuple(x) for x in approx.matrix.indices().T.tolist()}
    recall = len(ex & ap) / len(ex)
    assert 0.3 < recall < 1.0  # the switch changes which atoms are seeded, mostly the right ones
