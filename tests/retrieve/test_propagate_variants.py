"""Katz, label propagation, weighted BFS, Monte-Carlo RWR, Q-Iter and dense ranking on small graphs
whose expected values are worked out by hand in each test."""
from __future__ import annotations

import math

import pytest
import torch

from atomicrag.core.config import RetrieverConfig
from atomicrag.retrieve.propagate import (
    PPR,
    DenseSimilarity,
    Katz,
    LabelPropagation,
    QIter,
    RandomWalkRestart,
    WeightedBFS,
    build_propagator,
    propagate_topk,
    topk_atoms,
)

from .threads import one_thread  # noqa: F401  (autouse fixture)


def csr(n: int, edges: list[tuple[int, int, float]]) -> torch.Tensor:
    src = [a for a, _, _ in edges] + [b for _, b, _ in edges]
    dst = [b for _, b, _ in edges] + [a for a, _, _ in edges]
    val = torch.tensor([w for *_, w in edges] * 2, dtype=torch.float32)
    return torch.sparse_coo_tensor(torch.tensor([src, dst]), val, (n, n)).coalesce().to_sparse_csr()


PATH3 = csr(3, [(0, 1, 1.0), (1, 2, 1.0)])  # 0 - 1 - 2


def onehot(n: int, *nodes: int) -> torch.Tensor:
    s = torch.zeros(1, n)
    s[0, list(nodes)] = 1.0
    return s


def test_katz_path_graph():
    # P^T = A D^-1 on 0-1-2 (degrees 1, 2, 1): e0 -> e1 -> (e0 + e2)/2 -> e1
    # 3 steps from e0: beta e1 + beta^2 (e0 + e2)/2 + beta^3 e1
    b = 0.1
    out = Katz(beta=b, max_iter=3)(PATH3, onehot(3, 0))
    torch.testing.assert_close(out, torch.tensor([[b**2 / 2, b + b**3, b**2 / 2]]), atol=1e-7, rtol=0)
    with pytest.raises(ValueError):
        Katz(beta=1.0)


def test_labelprop_path_graph():
    # Y <- D^-1 A Y, seed 0 clamped to 1: [1,0,0] -> [1,.5,0] -> [1,.5,.5] -> [1,.75,.5]
    for steps, want in ((1, [1, 0.5, 0]), (2, [1, 0.5, 0.5]), (3, [1, 0.75, 0.5])):
        out = LabelPropagation(max_iter=steps)(PATH3, onehot(3, 0))
        torch.testing.assert_close(out, torch.tensor([want], dtype=torch.float32))


def test_bfs_max_product():
    # 0 -1.0- 1 -0.5- 2 -1.0- 3, decay 0.5
    adj = csr(4, [(0, 1, 1.0), (1, 2, 0.5), (2, 3, 1.0)])
    out = WeightedBFS(decay=0.5, max_hops=2)(adj, onehot(4, 0))
    # node 1: 1*0.5; node 2: 1*0.5*0.25; node 3 needs 3 hops; node 0 keeps its seed weight
    torch.testing.assert_close(out, torch.tensor([[1.0, 0.5, 0.125, 0.0]]))
    out = WeightedBFS(decay=0.5, max_hops=3)(adj, onehot(4, 0))
    assert out[0, 3].item() == pytest.approx(1.0 * 0.5 * 1.0 * 0.125)
    # two seeds (0.75 at 0, 0.25 at 3): node 2 takes the max, 0.25*1*0.5 = 0.125 > 0.75*0.125
    seeds = torch.tensor([[3.0, 0.0, 0.0, 1.0]])
    out = WeightedBFS(decay=0.5, max_hops=2)(adj, seeds)
    assert out[0, 2].item() == pytest.approx(0.125)
    assert out[0, 1].item() == pytest.approx(max(0.75 * 0.5, 0.25 * 0.5 * 0.25))


def test_bfs_batched_and_chunked_match():
    g = torch.Generator().manual_seed(0)
    n = 40
    edges = [(i, (i * 7 + 3) % n, float(torch.rand(1, generator=g)) + 0.1) for i in range(n) if i != (i * 7 + 3) % n]
    adj = csr(n, edges)
    seeds = (torch.rand(5, n, generator=g) > 0.9).float()
    full = WeightedBFS(max_hops=3)(adj, seeds)
    tiny = WeightedBFS(max_hops=3, edge_chunk=8, block_size=2)(adj, seeds)
    single = torch.cat([WeightedBFS(max_hops=3)(adj, seeds[i : i + 1]) for i in range(5)])
    torch.testing.assert_close(full, tiny)
    torch.testing.assert_close(full, single)


RWR_GRAPH = [(0, 1, 1.0), (1, 2, 2.0), (0, 2, 1.0), (2, 3, 1.0), (3, 4, 0.5), (4, 5, 1.0)]


def test_rwr_reproducible_and_close_to_ppr():
    # a 6-node graph: a triangle 0-1-2 joined to a path 2-3-4-5
    adj = csr(6, RWR_GRAPH)
    seeds = torch.tensor([[1.0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1.0, 1.0]])
    rwr = RandomWalkRestart(restart=0.5, num_walks=4000, walk_length=200, rng_seed=7)
    a, b = rwr(adj, seeds), rwr(adj, seeds)
    assert torch.equal(a, b)
    other = RandomWalkRestart(restart=0.5, num_walks=4000, walk_length=200, rng_seed=8)(adj, seeds)
    assert not torch.equal(a, other)
    exact = PPR(restart=0.5, max_iter=200)(adj, seeds)
    assert (a - exact).abs().max() < 0.02
    torch.testing.assert_close(a.sum(1), torch.ones(2), atol=0.02, rtol=0)  # 1 in expectation


@pytest.mark.parametrize("restart", [0.3, 0.7])
def test_rwr_unbiased_at_short_walks(restart):
    """walk_length 10, the default: the estimate matches the exact solve within sampling noise.

    Tolerance: 0.012 per node. With 40,000 walks the standard error of a node's score is below
    ~0.004 (each walk contributes at most 1 to a node), so 0.012 is ~3 standard errors. The old
    time-average estimator (which counted step 0) was off by 0.048 at restart 0.3 and 0.022 at 0.7."""
    adj = csr(6, RWR_GRAPH)
    seeds = torch.tensor([[1.0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1.0, 1.0]])
    exact = PPR(restart=restart, max_iter=500)(adj, seeds)
    est = RandomWalkRestart(restart=restart, num_walks=40000, walk_length=10, rng_seed=3)(adj, seeds)
    assert (est - exact).abs().max() < 0.012
    # the seed node is where a biased (step-0 counting) estimator errs most
    assert abs(est[0, 0] - exact[0, 0]) < 0.012


def test_rwr_dangling_seed_matches_exact():
    # node 3 is dangling (isolated) and seeded with half the mass: its walks jump back to the seeds
    adj = csr(4, [(0, 1, 1.0), (1, 2, 1.0)])
    seeds = torch.tensor([[0.5, 0, 0, 0.5]])
    exact = PPR(restart=0.3, max_iter=500, dangling="seed")(adj, seeds)
    est = RandomWalkRestart(restart=0.3, num_walks=40000, walk_length=10, rng_seed=1, dangling="seed")(adj, seeds)
    assert (est - exact).abs().max() < 0.012


def test_rwr_dangling_and_zero_seeds():
    adj = csr(4, [(0, 1, 1.0)])  # nodes 2, 3 isolated
    seeds = torch.tensor([[0.0, 0, 1.0, 0], [0, 0, 0, 0]])
    out = RandomWalkRestart(restart=0.3, num_walks=500, walk_length=5, dangling="seed")(adj, seeds)
    assert out[0, [0, 1, 3]].abs().sum() == 0  # stuck walks restart in place
    assert out[0, 2].item() == pytest.approx(1.0, abs=0.05)  # 1 in expectation
    assert out[1].abs().sum() == 0
    uni = RandomWalkRestart(restart=0.3, num_walks=200, walk_length=5, dangling="uniform")(adj, seeds)
    assert uni[0, 2] < 1.0 and uni[0, [0, 1, 3]].sum() > 0


def test_qiter_traversal_and_query_update():
    # entity e0 (node 0); atoms a0, a1, a2 (nodes 1-3) contain e0; atom a3 (node 4) is not linked
    adj = csr(5, [(1, 0, 1.0), (2, 0, 1.0), (3, 0, 1.0)])
    q = torch.nn.functional.normalize(torch.tensor([[1.0, 0.2, 0.0]]), dim=1)
    atoms = torch.nn.functional.normalize(torch.tensor(
        [[1.0, 0.0, 0.0], [0.9, 0.1, 0.42], [0.0, 1.0, 0.0], [0.99, 0.2, 0.0]]), dim=1)
    seeds = torch.zeros(1, 5)
    kw = {"atom_embeddings": atoms, "query_embeddings": q, "num_entities": 1}
    cos = (q @ atoms.T)[0]
    plain = QIter(traversal_depth=1, beam_size=1, anchor_top_k=1, query_update_weight=0.0)
    out = plain(adj, seeds, **kw)
    # anchor = a3 (cos ~ 1); it has no entity, so the traversal stops there
    assert out[0, 4].item() == pytest.approx(cos[3].item(), abs=1e-6) and out[0, 1:4].abs().sum() == 0
    # seed entity e0: anchors = a3 plus its atoms; beam 1 keeps a3, then nothing to expand from a3
    # with a beam of 2, the anchors a3 and a0 are kept and the hop expands a0 -> e0 -> {a1, a2}
    out = QIter(traversal_depth=1, beam_size=2, anchor_top_k=2, query_update_weight=0.0)(adj, seeds, **kw)
    assert out[0, 2].item() == pytest.approx(cos[1].item(), abs=1e-5)  # a1 (0.90) beats a2 (0.20)
    assert out[0, 3].item() == pytest.approx(cos[2].item(), abs=1e-5)  # beam 2: a2 also taken
    # query update: after retrieving the anchors (a3, a0 ~ direction x), the query turns toward y,
    # so with a beam of 1 the hop picks a2 (pure y) rather than a1
    one = QIter(traversal_depth=1, beam_size=1, anchor_top_k=1, query_update_weight=0.0)
    upd = QIter(traversal_depth=1, beam_size=1, anchor_top_k=1, query_update_weight=1.0)
    atoms2 = atoms[:3]  # drop a3: now a0 is the anchor
    adj2 = csr(4, [(1, 0, 1.0), (2, 0, 1.0), (3, 0, 1.0)])
    kw2 = {"atom_embeddings": atoms2, "query_embeddings": q, "num_entities": 1}
    o1, o2 = one(adj2, torch.zeros(1, 4), **kw2), upd(adj2, torch.zeros(1, 4), **kw2)
    assert o1[0, 2] > 0 and o1[0, 3] == 0  # no update: a1 (closest to q)
    assert o2[0, 3] > 0 and o2[0, 2] == 0  # update: q - a0 points along y, a2 wins
    qq = torch.nn.functional.normalize(q - atoms2[0:1], dim=1)
    assert o2[0, 3].item() == pytest.approx((qq @ atoms2[2]).item(), abs=1e-5)


def test_qiter_entity_anchors():
    # the query mentions e1 only; a2 (contains e1) is not similar but becomes an anchor
    adj = csr(5, [(2, 0, 1.0), (3, 0, 1.0), (4, 1, 1.0)])  # e0, e1; a0, a1 -> e0; a2 -> e1
    q = torch.tensor([[1.0, 0.0]])
    atoms = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.1, 1.0]]), dim=1)
    seeds = torch.tensor([[0.0, 1.0, 0.0, 0.0, 0.0]])
    out = QIter(traversal_depth=0, beam_size=2, anchor_top_k=1, query_update_weight=0.0)(
        adj, seeds, atom_embeddings=atoms, query_embeddings=q, num_entities=2)
    assert out[0, 2] > 0 and out[0, 4] > 0 and out[0, 3] == 0


def test_dense_similarity():
    adj = csr(4, [(0, 2, 1.0)])  # 2 entities, 2 atoms
    atoms = torch.tensor([[1.0, 0.0], [0.6, 0.8]])
    q = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    out = DenseSimilarity()(adj, torch.zeros(2, 4), atom_embeddings=atoms, query_embeddings=q, num_entities=2)
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.0, 0.0, 0.8], [0.0, 0.0, 1.0, 0.6]]))


def test_topk_atoms_ignores_entities():
    scores = torch.tensor([[9.0, 9.0, 0.1, 0.5, 0.3], [0.0, 0.0, 0.2, 0.1, 0.9]])
    vals, idx = topk_atoms(scores, num_entities=2, k=2)
    assert idx.tolist() == [[1, 2], [2, 0]]
    torch.testing.assert_close(vals, torch.tensor([[0.5, 0.3], [0.9, 0.2]]))
    assert topk_atoms(scores, 2, 10)[1].shape == (2, 3)  # k capped at the number of atoms


def test_propagate_topk_chunks_queries():
    adj = csr(6, [(0, 2, 1.0), (0, 3, 1.0), (1, 4, 1.0), (1, 5, 2.0), (0, 1, 0.5)])
    seeds = torch.eye(6)[:5].to_sparse()
    ppr = PPR(restart=0.3, max_iter=30, stop="accuracy")  # the same stop rule as the full scores
    v1, i1 = propagate_topk(ppr, adj, seeds, num_entities=2, k=3, query_batch=2)
    v2, i2 = topk_atoms(ppr(adj, seeds), 2, 3)
    torch.testing.assert_close(v1, v2)
    assert torch.equal(i1, i2)


@pytest.mark.parametrize("name", ["ppr", "power", "rwr", "katz", "labelprop", "bfs", "qiter", "dense"])
def test_every_method_zero_seeds_and_shapes(name):
    adj = csr(6, [(0, 2, 1.0), (0, 3, 1.0), (1, 4, 1.0), (1, 5, 2.0), (0, 1, 0.5)])
    seeds = torch.zeros(3, 6)
    seeds[0, 0] = 1.0
    seeds[2, 4] = 0.1
    prop = build_propagator(RetrieverConfig(name=name, num_walks=20, walk_length=3))
    kw = {"atom_embeddings": torch.eye(4, 3), "query_embeddings": torch.ones(3, 3), "num_entities": 2}
    out = prop(adj, seeds, **kw)
    assert out.shape == (3, 6) and torch.isfinite(out).all()
    if name not in ("dense", "qiter"):  # these rank by the query embedding, seeds or not
        assert out[1].abs().sum() == 0
        assert out[0].abs().sum() > 0
    assert math.isfinite(float(out.sum()))


def test_qiter_empty_beam_slots_keep_earlier_scores():
    # e0 (node 0) contains a0, a1, a2 (nodes 1-3). Anchors a0, a1 fill 2 of the 3 beam slots; the
    # hop finds only a2 new, so 2 slots are empty. Those must not write 0 over a0 and a1.
    adj = csr(4, [(1, 0, 1.0), (2, 0, 1.0), (3, 0, 1.0)])
    q = torch.tensor([[1.0, 0.0]])
    atoms = torch.nn.functional.normalize(torch.tensor([[1.0, 0.1], [1.0, 0.3], [0.2, 1.0]]), dim=1)
    out = QIter(traversal_depth=1, beam_size=3, anchor_top_k=2, query_update_weight=0.0)(
        adj, torch.zeros(1, 4), atom_embeddings=atoms, query_embeddings=q, num_entities=1)
    cos = (q @ atoms.T)[0]
    torch.testing.assert_close(out[0, 1:], cos, atol=1e-5, rtol=0)  # all three keep their cosine
    assert out[0, 0] == 0


def test_dense_with_faiss_hnsw_ranks_by_the_approximate_search(monkeypatch):
    """Switch #11 on the w/o ERGR retriever: the top-k comes from an HNSW index."""
    pytest.importorskip("faiss")
    from atomicrag.retrieve import ann

    gen = torch.Generator().manual_seed(1)
    atoms = torch.nn.functional.normalize(torch.randn(3000, 16, generator=gen), dim=1)
    q = torch.nn.functional.normalize(torch.randn(30, 16, generator=gen), dim=1)
    n = 1 + atoms.shape[0]
    adj = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (n, n)).to_sparse_csr()
    kw = {"atom_embeddings": atoms, "query_embeddings": q, "num_entities": 1}
    exact = topk_atoms(build_propagator(RetrieverConfig(name="dense"))(adj, torch.zeros(30, n), **kw), 1, 10)[1]
    monkeypatch.setattr(ann, "EF_SEARCH", 4)
    monkeypatch.setattr(ann, "_cache", {})
    prop = build_propagator(RetrieverConfig(name="dense", top_k=10, vector_index="faiss"))
    scores = prop(adj, torch.zeros(30, n), **kw)
    approx = topk_atoms(scores, 1, 10)[1]
    overlap = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(exact, approx)) / exact.numel()
    assert 0.3 < overlap < 1.0
    found = scores[:, 1:] > -2  # only the atoms the index returned carry a cosine
    assert int(found.sum(1).max()) <= 10
