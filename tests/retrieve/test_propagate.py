"""PPR of the propagation engine against python-igraph (PRPACK) and hand-worked values."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from atomicrag.core.config import RetrieverConfig
from atomicrag.retrieve.propagate import (
    PPR,
    build_propagator,
    restart_probability,
    topk_atoms,
)

from .threads import one_thread  # noqa: F401  (autouse fixture)

ig = pytest.importorskip("igraph")


def csr_from_edges(n: int, edges: list[tuple[int, int]], weights: list[float]) -> torch.Tensor:
    """Symmetric CSR [n, n] float32 from undirected edges."""
    if not edges:
        return torch.zeros(n, n).to_sparse_csr()
    src = torch.tensor([a for a, _ in edges] + [b for _, b in edges])
    dst = torch.tensor([b for _, b in edges] + [a for a, _ in edges])
    val = torch.tensor(list(weights) * 2, dtype=torch.float32)
    return torch.sparse_coo_tensor(torch.stack([src, dst]), val, (n, n)).coalesce().to_sparse_csr()


def random_graph(n: int, m: int, isolated: int, seed: int) -> tuple[torch.Tensor, ig.Graph]:
    """Weighted random graph whose last ``isolated`` nodes have no edges (dangling)."""
    rng = np.random.default_rng(seed)
    pairs = set()
    while len(pairs) < m:
        a, b = rng.integers(0, n - isolated, 2)
        if a != b:
            pairs.add((int(min(a, b)), int(max(a, b))))
    edges = sorted(pairs)
    w = rng.uniform(0.1, 2.0, len(edges)).astype(np.float32)  # float32 so both sides see equal weights
    g = ig.Graph(n=n, edges=edges)
    g.es["weight"] = [float(x) for x in w]
    return csr_from_edges(n, edges, [float(x) for x in w]), g


def random_seeds(n: int, q: int, per: int, seed: int, extra: dict[int, int] | None = None) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    s = torch.zeros(q, n)
    for i in range(q):
        idx = rng.choice(n, per, replace=False)
        s[i, idx] = torch.tensor(rng.uniform(0.05, 1.0, per), dtype=torch.float32)
    for qi, node in (extra or {}).items():
        s[qi, node] = 0.5  # seed a dangling node
    return s


def igraph_ppr(g: ig.Graph, seeds: torch.Tensor, restart: float) -> np.ndarray:
    return np.stack([
        np.array(g.personalized_pagerank(vertices=None, directed=False, damping=1.0 - restart,
                                         reset=row.double().tolist(), weights="weight", implementation="prpack"))
        for row in seeds
    ])


def dense_ppr(adj: torch.Tensor, seeds: torch.Tensor, restart: float, dangling: str) -> np.ndarray:
    """Exact solution by a dense linear solve: (I - c P^T - c v d^T) x = r s."""
    a = adj.to_dense().double().numpy()
    n = a.shape[0]
    deg = a.sum(1)
    d = (deg <= 0).astype(float)
    pt = (a / np.where(deg > 0, deg, 1.0)[None, :]) * (1 - d)[None, :]  # A D^-1, dangling columns 0
    c = 1.0 - restart
    out = []
    for row in seeds.double().numpy():
        s = row / row.sum()
        v = s if dangling == "seed" else np.full(n, 1.0 / n)
        out.append(np.linalg.solve(np.eye(n) - c * pt - c * np.outer(v, d), restart * s))
    return np.stack(out)


@pytest.fixture(scope="module")
def graph():
    n, isolated = 300, 6
    adj, g = random_graph(n, 1200, isolated, seed=0)
    seeds = random_seeds(n, 8, 12, seed=1, extra={2: n - 1, 5: n - 3})
    return adj, g, seeds


@pytest.mark.parametrize("restart", [0.3, 0.7])
@pytest.mark.parametrize("solver", ["cg", "chebyshev", "power"])
@pytest.mark.parametrize("reorder", [False, True])
def test_ppr_matches_igraph(graph, restart, solver, reorder):
    adj, g, seeds = graph
    ref = igraph_ppr(g, seeds, restart)
    out = PPR(restart=restart, max_iter=120, solver=solver, reorder=reorder, dangling="seed")(adj, seeds)
    assert out.shape == seeds.shape and out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-6, rtol=0)
    # the same top-25 "atoms" (nodes 100.. play the atoms)
    _, idx = topk_atoms(out, 100, 25)
    _, ref_idx = topk_atoms(torch.from_numpy(ref), 100, 25)
    assert [set(r) for r in idx.tolist()] == [set(r) for r in ref_idx.tolist()]


@pytest.mark.parametrize("dangling", ["seed", "uniform"])
@pytest.mark.parametrize("restart", [0.3, 0.7])
def test_ppr_matches_dense_solve(graph, dangling, restart):
    adj, g, seeds = graph
    ref = dense_ppr(adj, seeds, restart, dangling)
    out = PPR(restart=restart, max_iter=120, dangling=dangling, dtype=torch.float64)(adj, seeds)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-9, rtol=0)
    if dangling == "uniform":  # queries 2 and 5 seed a dangling node: there igraph (seed) differs
        assert np.abs(ref[2] - igraph_ppr(g, seeds[2:3], restart)[0]).max() > 1e-4


def test_batched_equals_per_query(graph):
    adj, _, seeds = graph
    ppr = PPR(restart=0.3, max_iter=20)
    batched = ppr(adj, seeds)
    single = torch.cat([ppr(adj, seeds[i : i + 1]) for i in range(seeds.shape[0])])
    blocked = PPR(restart=0.3, max_iter=20, block_size=3)(adj, seeds.to_sparse())  # sparse COO seeds too
    torch.testing.assert_close(batched, single, atol=1e-7, rtol=0)
    torch.testing.assert_close(batched, blocked, atol=1e-7, rtol=0)
    torch.testing.assert_close(batched, ppr(adj, seeds.to_sparse_csr()), atol=1e-7, rtol=0)
    # cached buffers, narrower block: same values up to float32 rounding (SpMM kernels may sum a
    # row in another order when the block width changes, ~1e-8 here)
    again = ppr(adj, seeds[:5])
    torch.testing.assert_close(batched[:5], again, atol=1e-7, rtol=0)


def test_zero_seed_queries_give_zeros(graph):
    adj, _, seeds = graph
    s = seeds.clone()
    s[1] = 0
    s[4] = -1.0  # negative weights are not a distribution: dropped
    for dangling in ("seed", "uniform"):
        out = PPR(restart=0.3, max_iter=10, dangling=dangling)(adj, s)
        assert torch.isfinite(out).all()
        assert out[1].abs().sum() == 0 and out[4].abs().sum() == 0
        assert torch.allclose(out[0].sum(), torch.tensor(1.0), atol=1e-5)


def test_hand_worked_two_nodes_and_star():
    # 0 - 1, seed at 0: x0 = r + c x1, x1 = c x0  =>  x0 = 1 / (1 + c), x1 = c / (1 + c)
    adj = csr_from_edges(2, [(0, 1)], [1.0])
    out = PPR(restart=0.3, max_iter=200)(adj, torch.tensor([[1.0, 0.0]]))
    torch.testing.assert_close(out, torch.tensor([[1 / 1.7, 0.7 / 1.7]]), atol=1e-6, rtol=0)
    # star: centre 0, leaves 1..3, seed at leaf 1: x0 = c / (1 + c), x1 = r + c^2 / (3 (1 + c)), x2 = x3
    adj = csr_from_edges(4, [(0, 1), (0, 2), (0, 3)], [1.0, 1.0, 1.0])
    c, r = 0.7, 0.3
    leaf = c * c / (3 * (1 + c))
    out = PPR(restart=r, max_iter=200)(adj, torch.tensor([[0.0, 2.0, 0.0, 0.0]]))
    torch.testing.assert_close(out, torch.tensor([[c / (1 + c), r + leaf, leaf, leaf]]), atol=1e-6, rtol=0)


def test_hand_worked_dangling():
    # 0 - 1 plus isolated node 2; seeds 0.5 at 0 and 0.5 at 2; r = 0.3, c = 0.7
    adj = csr_from_edges(3, [(0, 1)], [1.0])
    seeds = torch.tensor([[1.0, 0.0, 1.0]])
    # seed: x2 = r/2 + c x2 / 2 -> r / (2 - c); x0 = r/2 + c x1 + c x2 / 2; x1 = c x0
    x2 = 0.3 / 1.3
    x0 = (0.15 + 0.35 * x2) / 0.51
    out = PPR(restart=0.3, max_iter=300, dangling="seed")(adj, seeds)
    torch.testing.assert_close(out, torch.tensor([[x0, 0.7 * x0, x2]]), atol=1e-6, rtol=0)
    # uniform: x2 = r/2 + c x2 / 3; x0 = r/2 + c x1 + d; x1 = c x0 + d; d = c x2 / 3
    x2 = 0.15 / (1 - 0.7 / 3)
    d = 0.7 * x2 / 3
    x0 = (0.15 + 1.7 * d) / 0.51
    out = PPR(restart=0.3, max_iter=300, dangling="uniform")(adj, seeds)
    torch.testing.assert_close(out, torch.tensor([[x0, 0.7 * x0 + d, x2]]), atol=1e-6, rtol=0)


@pytest.mark.parametrize("solver", ["cg", "chebyshev"])
@pytest.mark.parametrize("restart", [0.3, 0.7])
def test_fast_solvers_are_as_accurate_as_power_in_fewer_steps(graph, restart, solver):
    adj, _, seeds = graph
    exact = torch.from_numpy(dense_ppr(adj, seeds, restart, "seed"))
    power = PPR(restart=restart, max_iter=20, solver="power", dtype=torch.float64)
    fast = PPR(restart=restart, max_iter=20, solver=solver, dtype=torch.float64)
    err_p = (power(adj, seeds) - exact).abs().sum(1)  # [Q] L1 error per query
    err_f = (fast(adj, seeds) - exact).abs().sum(1)
    assert power.last_steps == 20 and fast.last_steps < 20
    assert (err_f <= 2 * (1 - restart) ** 21 + 1e-12).all()  # the guaranteed bound (x2 for normalising)
    assert err_f.mean() <= err_p.mean()


@pytest.mark.parametrize("solver", ["cg", "chebyshev"])
def test_converged_queries_are_frozen(graph, solver):
    # a query's result must not depend on the block it shares with slower queries
    adj, _, seeds = graph
    ppr = PPR(restart=0.3, max_iter=20, dtype=torch.float64, solver=solver)
    together = ppr(adj, seeds)
    alone = torch.cat([ppr(adj, seeds[i : i + 1]) for i in range(seeds.shape[0])])
    torch.testing.assert_close(together, alone, atol=1e-12, rtol=0)


def test_tolerance_stops_early(graph):
    adj, _, seeds = graph
    exact = torch.from_numpy(dense_ppr(adj, seeds, 0.3, "seed")).float()
    for solver in ("power", "cg", "chebyshev"):
        ppr = PPR(restart=0.3, max_iter=500, tol=1e-5, solver=solver)
        out = ppr(adj, seeds)
        assert ppr.last_steps < 100
        assert (out - exact).abs().sum(1).max() < 1e-4


def test_build_propagator_semantics():
    paper = RetrieverConfig(damping=0.3, damping_semantics="restart")
    code = RetrieverConfig(damping=0.3, damping_semantics="continue", dangling="uniform")
    assert restart_probability(paper) == pytest.approx(0.3)
    assert restart_probability(code) == pytest.approx(0.7)
    p = build_propagator(code)
    assert isinstance(p, PPR) and p.restart == pytest.approx(0.7) and p.dangling == "uniform"
    exact = build_propagator(RetrieverConfig(name="power", damping_semantics="restart"))
    assert exact.solver == "power" and exact.dtype == torch.float64
    with pytest.raises(ValueError):
        build_propagator(RetrieverConfig(damping=1.0, damping_semantics="continue"))  # restart 0
    with pytest.raises(ValueError):
        build_propagator(RetrieverConfig(name="dense_passage"))


def test_exact_variant_matches_igraph(graph):
    adj, g, seeds = graph
    out = build_propagator(RetrieverConfig(name="power", damping=0.3, damping_semantics="continue"))(adj, seeds)
    np.testing.assert_allclose(out.numpy(), igraph_ppr(g, seeds, 0.7), atol=1e-7, rtol=0)


def test_directed_adjacency_is_rejected():
    adj = torch.tensor([[0.0, 1.0], [0.0, 0.0]]).to_sparse_csr()
    with pytest.raises(ValueError, match="symmetric"):
        PPR(restart=0.3)(adj, torch.tensor([[1.0, 0.0]]))


@pytest.mark.parametrize("solver", ["cg", "chebyshev"])
def test_queries_converging_at_different_steps(graph, solver):
    # a query seeded only on an isolated node converges at once, a zero-seed query never moves,
    # the others need many steps (c = 0.9): each must match its stand-alone result and the exact one
    adj, _, seeds = graph
    n = seeds.shape[1]
    s = torch.cat([seeds[:3], torch.zeros(2, n)])
    s[3, n - 2] = 1.0
    ppr = PPR(restart=0.1, max_iter=60, dtype=torch.float64, solver=solver)
    together = ppr(adj, s)
    alone = torch.cat([ppr(adj, s[i : i + 1]) for i in range(s.shape[0])])
    torch.testing.assert_close(together, alone, atol=1e-12, rtol=0)
    assert together[4].abs().sum() == 0 and together[3, n - 2] == pytest.approx(1.0)
    exact = torch.from_numpy(dense_ppr(adj, s[:4], 0.1, "seed"))
    assert ((together[:4] - exact).abs().sum(1) <= 2 * 0.9**61 + 1e-9).all()


@pytest.mark.parametrize("reorder", [False, True])
def test_fused_topk_equals_scores_topk(graph, reorder):
    adj, _, seeds = graph
    ppr = PPR(restart=0.3, max_iter=20, reorder=reorder, block_size=3, stop="accuracy")  # as the full scores
    v1, i1 = ppr.topk(adj, seeds, 100, 25)
    v2, i2 = topk_atoms(ppr(adj, seeds), 100, 25)
    torch.testing.assert_close(v1, v2, atol=0, rtol=0)
    assert torch.equal(i1, i2)
