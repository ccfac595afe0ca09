"""Certified top-k stopping of PPR (stop="topk"): the same top-k sets as the exact solution, fewer
steps, no dependence on the batch, no early stop on a tie; the fixed-step mode stays exact."""
from __future__ import annotations

import pytest
import torch

from atomicrag.retrieve.propagate import PPR, topk_atoms

from .threads import one_thread  # noqa: F401  (autouse fixture)

K = 10


def atom_entity_graph(num_e: int = 300, num_a: int = 400, seed: int = 0) -> torch.Tensor:
    """Symmetric CSR: entities first; each atom contains 2-5 entities; entity-entity edges."""
    g = torch.Generator().manual_seed(seed)
    src, dst, w = [], [], []
    for atom in range(num_a):
        ents = torch.randperm(num_e, generator=g)[: int(torch.randint(2, 6, (1,), generator=g))]
        src += [num_e + atom] * len(ents)
        dst += ents.tolist()
        w += [1.0] * len(ents)
    pairs = torch.randint(0, num_e, (2, 3 * num_e), generator=g)
    keep = pairs[0] != pairs[1]
    src += pairs[0][keep].tolist()
    dst += pairs[1][keep].tolist()
    w += (0.5 + torch.rand(int(keep.sum()), generator=g)).tolist()
    n = num_e + num_a
    idx = torch.tensor([src + dst, dst + src])
    return torch.sparse_coo_tensor(idx, torch.tensor(w + w), (n, n)).coalesce().to_sparse_csr()


def seeds_for(n: int, num_e: int, q: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    s = torch.zeros(q, n)
    for i in range(q):
        ents = torch.randperm(num_e, generator=g)[:5]
        atoms = num_e + torch.randperm(n - num_e, generator=g)[:K]
        s[i, ents] = 0.3 + 0.7 * torch.rand(5, generator=g)
        s[i, atoms] = 0.1 * torch.rand(K, generator=g)
    return s


@pytest.fixture(scope="module")
def setup():
    num_e = 300
    adj = atom_entity_graph(num_e)
    seeds = seeds_for(adj.shape[0], num_e, 160)  # one block of >= 128 queries: certified (ppr.MIN_CERT_WIDTH)
    exact = PPR(restart=0.3, max_iter=400, tol=1e-13, solver="power", dtype=torch.float64, stop="accuracy")
    return adj, seeds, num_e, exact(adj, seeds)


@pytest.mark.parametrize("reorder", [False, True])
def test_certified_sets_are_exact_and_come_earlier(setup, reorder):
    adj, seeds, num_e, exact = setup
    _, ref = topk_atoms(exact, num_e, K)
    fast = PPR(restart=0.3, max_iter=20, reorder=reorder, stop="topk")
    acc = PPR(restart=0.3, max_iter=20, reorder=reorder, stop="accuracy")
    _, got = fast.topk(adj, seeds, num_e, K)
    _, got_acc = acc.topk(adj, seeds, num_e, K)
    for q in range(seeds.shape[0]):
        assert set(got[q].tolist()) == set(ref[q].tolist()), f"query {q}"
        assert set(got_acc[q].tolist()) == set(ref[q].tolist())
    # most queries are certified before the accuracy bound is met
    assert fast.last_query_steps.float().mean() < acc.last_query_steps.float().mean() - 1
    assert (fast.last_query_steps <= acc.last_query_steps).all()


def test_result_does_not_depend_on_the_batch(setup):
    # stopped queries are copied out and the block is compacted: each query's top-k must equal its
    # stand-alone run, whichever queries it shared a block with
    adj, seeds, num_e, _ = setup
    ppr = PPR(restart=0.3, max_iter=20, dtype=torch.float64, stop="topk")
    v, i = ppr.topk(adj, seeds, num_e, K)
    for q in range(0, seeds.shape[0], 16):
        v1, i1 = ppr.topk(adj, seeds[q: q + 1], num_e, K)
        assert torch.equal(i1[0], i[q])
        torch.testing.assert_close(v1[0], v[q], atol=1e-12, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_certified_scores_are_the_ppr_scores_of_those_atoms(setup, dtype):
    # a certified query's top-k is read off its iterate as it stops (the column is never copied
    # out of the block): each returned score must be that atom's PPR score, in descending order,
    # for the right query (a mixed-up column would be off by far more than the iterate's error,
    # 0.4% at most here)
    adj, seeds, num_e, exact = setup
    fast = PPR(restart=0.3, max_iter=20, stop="topk", dtype=dtype)
    v, i = fast.topk(adj, seeds, num_e, K)
    assert fast.last_query_steps.max() < 20  # they were certified, not run out
    ref = exact[torch.arange(seeds.shape[0]).unsqueeze(1), num_e + i]  # [Q, K] exact scores there
    torch.testing.assert_close(v.double(), ref, rtol=0.02, atol=0)
    assert (v[:, :-1] >= v[:, 1:]).all()


def first_accurate_step(adj: torch.Tensor, seeds: torch.Tensor, c: float, target: float) -> int:
    """The first Chebyshev iterate y_k whose residual L1 norm is at most ``target`` (dense, float64)."""
    from atomicrag.retrieve.propagate.solvers import chebyshev_weights

    a = adj.to_dense().double()
    m = c * a / a.sum(0).clamp_min(1e-300)  # c A D^-1
    s = (seeds[0] / seeds[0].sum()).double()
    w = chebyshev_weights(c, 60)
    y_prev, y = torch.zeros_like(s), s.clone()  # y_0, y_1
    for k in range(1, 59):
        if float((s + m @ y - y).abs().sum()) <= target:
            return k
        y_prev, y = y, w[k] * (m @ y + s) + (1 - w[k]) * y_prev
    raise AssertionError("no convergence")


def test_a_tie_at_the_kth_place_is_never_certified():
    # two atoms with the same entities and the same seed weight tie exactly for the last place of
    # the top-2 (the first place is the heavily seeded atom): no bound can separate them, so the
    # query may only stop once the accuracy bound of max_iter power steps is met
    num_e = 6
    edges = [(6, 0), (6, 1), (7, 2), (7, 3), (8, 2), (8, 3), (9, 4), (9, 5), (0, 2), (1, 4), (3, 5)]
    n = 10
    src = torch.tensor([a for a, _ in edges] + [b for _, b in edges])
    dst = torch.tensor([b for _, b in edges] + [a for a, _ in edges])
    adj = torch.sparse_coo_tensor(torch.stack([src, dst]), torch.ones(len(src)), (n, n)).coalesce().to_sparse_csr()
    seeds = torch.zeros(1, n)
    seeds[0, 6] = 1.0
    seeds[0, [7, 8]] = 0.2
    accurate = first_accurate_step(adj, seeds, 0.7, 0.7 ** 21)
    fast = PPR(restart=0.3, max_iter=20, stop="topk")
    _, i_fast = fast.topk(adj, seeds, num_e, 2)
    assert int(fast.last_query_steps[0]) >= accurate
    assert i_fast[0, 0] == 0  # atom 6 (index 0) first
    # with k = 3 the tied pair is inside the set, so the set is certified early
    _, i3 = fast.topk(adj, seeds, num_e, 3)
    assert int(fast.last_query_steps[0]) < accurate and set(i3[0].tolist()) == {0, 1, 2}


def test_fixed_and_accuracy_modes_from_config():
    from atomicrag.core.config import RetrieverConfig
    from atomicrag.retrieve.propagate import build_propagator

    fixed = build_propagator(RetrieverConfig(ppr_stop="fixed", max_iter=7))
    assert fixed.solver == "power"
    adj = atom_entity_graph(50, 60)
    fixed.topk(adj, seeds_for(adj.shape[0], 50, 3), 50, K)
    assert fixed.last_steps == 7  # exactly max_iter power steps: reproduces fixed-step code
    assert build_propagator(RetrieverConfig(ppr_stop="accuracy")).stop == "accuracy"
    assert build_propagator(RetrieverConfig()).stop == "topk"
    with pytest.raises(ValueError, match="ppr_stop"):
        RetrieverConfig(ppr_stop="sometimes")
