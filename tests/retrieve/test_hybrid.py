"""Hybrid retrieval levers: BM25 seeding, passage nodes, fused passage ranking, self-contained atoms."""
from __future__ import annotations

import pytest
import torch

from atomicrag.atomize.nlp import Sentence
from atomicrag.atomize.selfcontained import atom_text, chunk_subject, self_contained
from atomicrag.core.compose import load_config
from atomicrag.core.config import GraphConfig, RetrieverConfig
from atomicrag.core.schemas import Atom, AtomizeResult, Question
from atomicrag.engine.wiring import batch_retriever
from atomicrag.graph.build import build_graph
from atomicrag.retrieve.lexical import BM25Matrix, LexicalScorer, tokenize
from atomicrag.retrieve.passage_nodes import bridge_topk, build_passage_layer, per_passage, rank_passages

pytest.importorskip("bm25s")


class BagEmbedder:
    """Deterministic bag-of-words embedder (hashed tokens), so cosine follows word overlap."""

    name = "bag"
    dim = 64

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        out = torch.zeros(len(texts), self.dim)
        for i, t in enumerate(texts):
            for tok in tokenize(t):
                out[i, sum(map(ord, tok)) % self.dim] += 1.0
        return torch.nn.functional.normalize(out + 1e-6, dim=1)


def _atoms() -> list[Atom]:
    rows = [  # (passage, text, entities): a two-hop chain Lothair II -> Ermengarde of Tours
        ("p1", "Lothair II was king of Lotharingia.", ["Lothair II", "Lotharingia"]),
        ("p1", "Lothair II was a son of Ermengarde of Tours.", ["Lothair II", "Ermengarde of Tours"]),
        ("p2", "Ermengarde of Tours died on 20 March 851.", ["Ermengarde of Tours"]),
        ("p2", "Ermengarde of Tours was a daughter of Hugh of Tours.", ["Ermengarde of Tours", "Hugh of Tours"]),
        ("p3", "Lothair I was an emperor.", ["Lothair I"]),
        ("p3", "Lothair I died in 855.", ["Lothair I"]),
        ("p4", "Tours is a city in France.", ["Tours", "France"]),
    ]
    return [Atom(id=f"{p}#a{i}", text=t, chunk_id=p, passage_id=p, entities=e) for i, (p, t, e) in enumerate(rows)]


@pytest.fixture(scope="module")
def graph():
    return build_graph(AtomizeResult(atoms=_atoms()), BagEmbedder(), GraphConfig())


def test_bm25_prefers_the_rare_exact_name():
    m = BM25Matrix(["Lothair I was an emperor", "Lothair II was a king", "a king of France"])
    s = m.scores(["Lothair II", "king"])  # [2, 3]
    assert s.shape == (2, 3)
    assert int(s[0].argmax()) == 1  # "ii" only occurs in the second text
    assert s[1, 0] == 0 and s[1, 1] > 0 and s[1, 2] > 0
    assert torch.equal(m.scores([]), torch.zeros(0, 3))


def test_lexical_entity_scores_are_row_normalised(graph):
    lex = LexicalScorer([a.text for a in graph.atoms], graph.entity_texts)
    s = lex.entity_scores(["Ermengarde", "zzz unknown"])  # [2, E]
    assert s[0].max() == pytest.approx(1.0)
    assert graph.entity_texts[int(s[0].argmax())] == "Ermengarde of Tours"
    assert s[1].abs().sum() == 0  # no overlap: no signal, not an error


def test_passage_layer_adds_passage_atom_edges(graph):
    layer = build_passage_layer(graph, 2.0, with_nodes=True)
    assert layer.passage_ids == ["p1", "p2", "p3", "p4"]
    n = graph.num_nodes
    adj = layer.adjacency.to_dense()
    assert adj.shape == (n + 4, n + 4)
    assert torch.equal(adj, adj.T)
    a_p2 = graph.num_entities + 2  # atom 2 belongs to p2
    assert adj[a_p2, n + 1] == 2.0 and adj[a_p2, n + 0] == 0.0
    assert torch.equal(adj[:n, :n], graph.adjacency.to_dense())  # the stored graph is unchanged
    pooled = per_passage(torch.arange(7.0).unsqueeze(0), layer, "sum")  # [1, P]
    assert pooled.tolist() == [[1.0, 5.0, 9.0, 6.0]]


def _engine(graph, **fields):
    cfg = load_config({"retriever": {"name": "ppr", "damping": 0.3, "entity_sim_threshold": 0.9,
                                     "atom_seed_weight": 0.1, "top_k": 5,
                                     "query_entities": "spacy_match", **fields},
                       "embedder": {"name": "fake"}})
    return batch_retriever(cfg, graph, BagEmbedder())


@pytest.mark.parametrize("fields", [
    {"lexical_weight": 0.5},
    {"passage_nodes": True, "passage_seed_weight": 0.5, "passage_ranking": "node"},
    {"passage_ranking": "fusion", "fusion_dense_weight": 0.5, "fusion_lexical_weight": 0.5},
    {"passage_nodes": True, "passage_ranking": "atom_sum"},
    {"passage_ranking": "bridge", "bridge_weight": 0.9},
])
def test_hybrid_engine_finds_the_second_hop(graph, fields):
    q = Question(id="q", question="When did Lothair II's mother die?", answers=["851"], supporting_ids=["p1", "p2"])
    ranked = _engine(graph, **fields).run([q]).traces[0].retrieved_passages
    assert ranked[0] == "p1" and "p2" in ranked[:3], ranked  # first hop first, the second hop retrieved
    assert set(ranked) <= {"p1", "p2", "p3", "p4"}


def test_run_returns_its_stage_records(graph):
    # the engine reads the decomposition and sieve records from the result, not from attributes
    # the retriever kept of its last batch
    qs = [Question(id=f"q{i}", question=t, answers=[]) for i, t in
          enumerate(["When did Lothair II's mother die?", "Who was Lothair II?"])]
    eng = _engine(graph)
    res = eng.run(qs)
    assert [t.question_id for t in res.traces] == ["q0", "q1"]
    assert len(res.ranked_documents) == len(res.decomposed) == len(res.decompositions) == len(res.sieve) == 2
    assert [d.queries for d in res.decompositions] == [[q.question] for q in qs]  # decompose=none
    # sieve=none keeps every candidate of the trace
    assert [[a.atom_id for a in s.kept] for s in res.sieve] == [
        [c["atom_id"] for per in t.candidates for c in per] for t in res.traces]
    assert all(s.kept for s in res.sieve)
    assert not hasattr(eng, "last_decompositions") and not hasattr(eng, "last_sieve")


def _bridge_atoms() -> list[Atom]:
    rows = [  # titled passages (title entity first, as title_context writes them)
        ("film", "Blood Street: Blood Street is a 1988 film directed by Leo Fong.", ["Blood Street", "1988", "Leo Fong"]),
        ("film", "Blood Street: It stars Richard Norton.", ["Blood Street", "Richard Norton"]),
        ("fong", "Leo Fong: Leo Fong is a Chinese American actor.", ["Leo Fong", "Chinese", "American"]),
        ("fong", "Leo Fong: He was born in 1928.", ["Leo Fong", "1928"]),
        ("norton", "Richard Norton: Richard Norton is an Australian actor.", ["Richard Norton", "Australian"]),
        ("kong", "Jackie Kong: Jackie Kong is an American film director.", ["Jackie Kong", "American"]),
        ("list", "1988 in film: Films of 1988.", ["1988", "Films"]),  # one atom: ties go to the first mention
    ]
    return [Atom(id=f"{p}#a{i}", text=t, chunk_id=p, passage_id=p, entities=e) for i, (p, t, e) in enumerate(rows)]


def test_passage_subjects_and_their_mentions():
    g = build_graph(AtomizeResult(atoms=_bridge_atoms()), BagEmbedder(), GraphConfig())
    layer = build_passage_layer(g, 1.0, with_nodes=False)
    subjects = {p: g.entity_texts[int(s)] if s >= 0 else None for p, s in zip(layer.passage_ids, layer.subject)}
    assert subjects == {"film": "Blood Street", "fong": "Leo Fong", "norton": "Richard Norton",
                        "kong": "Jackie Kong", "list": "1988"}
    mentions = {(g.atoms[int(a)].id, layer.passage_ids[int(p)])
                for a, p in zip(layer.mention_atom, layer.mention_passage)}
    # atoms naming another passage's subject; a passage's own atoms are not its bridge
    assert mentions == {("film#a0", "fong"), ("film#a0", "list"), ("film#a1", "norton")}


def test_bridge_ranking_lifts_the_passage_a_top_atom_names():
    g = build_graph(AtomizeResult(atoms=_bridge_atoms()), BagEmbedder(), GraphConfig())
    layer = build_passage_layer(g, 1.0, with_nodes=False)
    order = {p: i for i, p in enumerate(layer.passage_ids)}
    scores = torch.zeros(1, g.num_atoms)  # [Q=1, A]: the director atom first, the cast atom second
    scores[0, 0], scores[0, 1], scores[0, 5] = 1.0, 0.5, 0.6  # kong's own atom beats fong's own atoms
    kw = dict(atom_scores=scores, passage_scores=None, dense=torch.zeros(1, layer.num_passages), lexical=None,
              dense_weight=0.0, lexical_weight=0.0)
    ranked = rank_passages("bridge", layer, bridge_weight=0.9, **kw)[0]  # [P]
    assert ranked[order["fong"]] == pytest.approx(0.9)  # the director atom's score, x 0.9
    assert ranked[order["norton"]] == pytest.approx(0.45)  # named by the weaker cast atom
    assert ranked[order["film"]] == 1.0 and ranked[order["kong"]] == pytest.approx(0.6)  # own best atoms
    plain = rank_passages("bridge", layer, bridge_weight=0.0, **kw)[0]
    assert plain[order["fong"]] < plain[order["kong"]]  # without the bridge the director's passage loses


def test_sparse_bridge_topk_equals_the_dense_ranking_over_the_top_k_atoms():
    g = build_graph(AtomizeResult(atoms=_bridge_atoms()), BagEmbedder(), GraphConfig())
    layer = build_passage_layer(g, 1.0, with_nodes=False)
    gen = torch.Generator().manual_seed(0)
    scores = torch.rand(6, g.num_atoms, generator=gen)  # [Q, A], distinct values
    vals, idx = scores.topk(3, dim=1)  # [Q, 3]: the fused path keeps only these
    dense = torch.zeros_like(scores).scatter_(1, idx, vals)  # [Q, A], 0 off the top-k
    ref = rank_passages("bridge", layer, atom_scores=dense, passage_scores=None, dense=dense[:, :0], lexical=None,
                        dense_weight=0.0, lexical_weight=0.0, bridge_weight=0.9)  # [Q, P]
    got_s, got_p = bridge_topk(layer, vals, idx, 0.9, depth=4)  # [Q, 4]
    for q in range(6):
        reached = [int(p) for p in ref[q].argsort(descending=True) if ref[q, p] > 0][:4]
        assert got_p[q][got_p[q] >= 0].tolist() == reached
        assert torch.allclose(got_s[q][: len(reached)], ref[q, reached])


def test_cased_query_entities_drop_lowercase_graph_names():
    atoms = _bridge_atoms() + [Atom(id="x#a0", text="Film: a film is a motion picture.", chunk_id="x",
                                    passage_id="x", entities=["Film"])]
    g = build_graph(AtomizeResult(atoms=atoms), BagEmbedder(), GraphConfig())
    q = "What nationality is the director of film Blood Street?"
    matched = _engine(g, query_entities="spacy_match", query_entity_max_df=1.0)._graph_names([q])[0]
    cased = _engine(g, query_entities="spacy_cased", query_entity_max_df=1.0)._graph_names([q])[0]
    assert "Film" in matched and "Blood Street" in matched
    assert cased == ["Blood Street"]  # "film" is written as a common noun in the question


def test_dense_retriever_ignores_the_hybrid_levers_of_a_preset(graph):
    # {"retriever": {"name": "dense"}} merges over the default preset (hybrid): it must still run
    q = Question(id="q", question="When did Lothair II's mother die?", answers=["851"], supporting_ids=["p1", "p2"])
    eng = _engine(graph, name="dense", lexical_weight=0.3, passage_ranking="bridge")
    assert eng.hybrid is None and eng.run([q]).traces[0].retrieved_passages


def test_hybrid_config_is_validated():
    with pytest.raises(ValueError, match="passage_ranking"):
        RetrieverConfig(passage_ranking="magic")
    with pytest.raises(ValueError, match="passage_nodes"):
        RetrieverConfig(passage_ranking="node")
    with pytest.raises(ValueError, match="lexical_weight"):
        RetrieverConfig(lexical_weight=1.5)
    with pytest.raises(ValueError, match="fusion_dense_weight"):
        RetrieverConfig(fusion_dense_weight=-1)
    with pytest.raises(ValueError, match="bridge_weight"):
        RetrieverConfig(bridge_weight=-0.5)


def test_self_contained_atoms_resolve_the_leading_pronoun():
    assert self_contained("He was the second son of Lothair I.", ["Lothair I"], "Lothair II") == (
        "Lothair II was the second son of Lothair I.", ["Lothair II", "Lothair I"], True)
    assert self_contained("His book sold well.", [], "Etan Boritzer")[0] == "Etan Boritzer's book sold well."
    assert self_contained("The project is led by Ada Okafor.", ["Ada Okafor"], "Apollo")[0] == \
        "Apollo is led by Ada Okafor."
    assert self_contained("It is known that he left.", [], "X")[2] is False  # expletive "it"
    assert self_contained("Paris is big.", ["Paris"], "France") == ("Paris is big.", ["Paris"], False)


def test_markup_is_stripped_and_untitled_chunks_use_their_first_entity():
    assert atom_text("## Team\n**Ada** reports to [Bob](http://x) <b>now</b>.") == "Team\nAda reports to Bob now."
    assert chunk_subject("Lothair II (king)", []) == "Lothair II"
    assert chunk_subject("", [Sentence(0, 5, ["Ada Okafor", "Acme"])]) == "Ada Okafor"
    assert chunk_subject("", []) == ""
