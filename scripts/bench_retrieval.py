"""Benchmark of batched PPR against python-igraph (prints figures; not a timed test).

Synthetic Atom–Entity Graphs at the paper's scales (Table 6):
  medium    Graph-Bench Medical:  9,087 entities + 5,560 atoms, ~121k entity–entity edges, ~4 containment/atom
  hotpot    HotpotQA:            84,592 entities + 28,403 atoms, ~455k entity–entity edges, ~4 containment/atom
  hotpot10x 10x HotpotQA
The generator mimics how the graph is built: passages of ~3 atoms, each passage mentions a few
popular entities (Zipf) and several entities of its own; atoms contain ~4 of their passage's
entities; relevance edges join entities of one passage (weight = occurrences); synonym edges form
small random clusters (weight cosine in [0.8, 1]); entity ids follow first appearance, as when the
graph is built passage by passage. Queries seed ~4-10 entities (weight = cosine in [0.3, 1]) and 25
atoms with weight 0.1 x cosine, as the paper's seeding does.

For every scale: python-igraph's PRPACK per query on a sample (extrapolated), the batched engine on
all queries, top-25 agreement on the sample, queries/second for several batch sizes, peak memory,
and the number of steps needed for the exact top-25 (power iteration vs Chebyshev).
The last line is ``ratio_vs_igraph=<x> top25_agreement=<y>`` for the hotpot scale.

    .venv/bin/python scripts/bench_retrieval.py --scales medium,hotpot,hotpot10x --queries 1024
    .venv/bin/python scripts/bench_retrieval.py --quick          # small sample, fewer batch sizes
"""
from __future__ import annotations

import argparse
import math
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atomicrag.retrieve.propagate import PPR, topk_atoms
from atomicrag.retrieve.propagate.base import prepare_graph
from atomicrag.retrieve.propagate.solvers import chebyshev_weights

SCALES = {  # entities, atoms, relevance edges, synonym edges
    "medium": (9_087, 5_560, 21_068, 99_707),
    "hotpot": (84_592, 28_403, 177_734, 276_577),
    "hotpot10x": (845_920, 284_030, 1_777_340, 2_765_770),
}


def synthetic_graph(
    num_entities: int, num_atoms: int, relevance: int, synonym: int, contain_per_atom: int = 4,
    atoms_per_passage: int = 3, popular_frac: float = 0.2, popular_per_passage: int = 4, seed: int = 0,
) -> tuple[torch.Tensor, dict]:
    """A symmetric CSR adjacency [N, N] (entities first, then atoms) and its passage structure."""
    g = torch.Generator().manual_seed(seed)
    e, a = num_entities, num_atoms
    p = math.ceil(a / atoms_per_passage)
    pool = int(e * popular_frac)  # entities shared across passages, drawn by a Zipf law
    own = e - pool  # entities mentioned by a single passage
    zipf = (torch.arange(pool, dtype=torch.float64) + 5.0) ** -1.1
    pop_ment = torch.multinomial(zipf, p * popular_per_passage, replacement=True, generator=g)  # [P*k]
    pop_pass = torch.arange(p).repeat_interleave(popular_per_passage)
    own_pass = torch.randint(0, p, (own,), generator=g)
    own_ent = torch.arange(pool, e)
    m_pass = torch.cat([pop_pass, own_pass])  # mentions: (passage, entity)
    m_ent = torch.cat([pop_ment, own_ent])
    order = torch.argsort(m_pass, stable=True)
    m_pass, m_ent = m_pass[order], m_ent[order]
    # relabel entities by first appearance (passage order); never-mentioned ones go last
    first = torch.full((e,), len(m_ent), dtype=torch.int64).scatter_reduce(
        0, m_ent, torch.arange(len(m_ent)), reduce="amin")
    new_id = torch.empty(e, dtype=torch.int64)
    new_id[torch.argsort(first, stable=True)] = torch.arange(e)
    m_ent = new_id[m_ent]
    start = torch.searchsorted(m_pass, torch.arange(p))  # [P] first mention of each passage
    cnt = torch.searchsorted(m_pass, torch.arange(p), right=True) - start  # [P] >= popular_per_passage

    def pick(passages: torch.Tensor) -> torch.Tensor:  # a random mention of each given passage
        return m_ent[start[passages] + (torch.rand(passages.shape, generator=g) * cnt[passages]).long()]

    def unique_pairs(x: torch.Tensor, y: torch.Tensor, target: int) -> tuple[torch.Tensor, ...]:
        """Distinct (x, y) pairs, x != y, ``target`` of them at random, weight = occurrences."""
        x, y = torch.minimum(x, y), torch.maximum(x, y)  # one orientation per undirected pair
        keep = x != y
        key, count = torch.unique(x[keep] * (e + a) + y[keep], return_counts=True)
        sel = torch.randperm(key.numel(), generator=g)[:target]
        return key[sel] // (e + a), key[sel] % (e + a), count[sel].float()

    atom_pass = torch.arange(a) // atoms_per_passage
    ca = torch.arange(a).repeat_interleave(2 * contain_per_atom)
    ca, ce, _ = unique_pairs(ca + e, pick(atom_pass[ca]), contain_per_atom * a)  # atom -> entity of its passage
    cw = torch.ones(ca.numel())
    rp = torch.randint(0, p, (2 * relevance,), generator=g)
    rs, rd, rw = unique_pairs(pick(rp), pick(rp), relevance)  # relevance: pairs within a passage
    # synonym clusters of random entities, all pairs, trimmed to the target count
    csize = max(8, math.ceil(2.4 * synonym / e) + 1)
    perm = torch.randperm(e, generator=g)[: (e // csize) * csize].view(-1, csize)
    iu = torch.triu_indices(csize, csize, 1)
    ss, sd = perm[:, iu[0]].reshape(-1), perm[:, iu[1]].reshape(-1)
    sel = torch.randperm(ss.numel(), generator=g)[:synonym]
    ss, sd = ss[sel], sd[sel]
    src = torch.cat([ca, rs, ss])
    dst = torch.cat([ce, rd, sd])
    w = torch.cat([cw, rw, 0.8 + 0.2 * torch.rand(ss.numel(), generator=g)])
    n = e + a
    idx = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    adj = torch.sparse_coo_tensor(idx, torch.cat([w, w]), (n, n)).coalesce()  # duplicates summed
    info = {"atom_pass": atom_pass, "num_entities": e, "num_atoms": a, "undirected_edges": adj._nnz() // 2}
    return adj.to_sparse_csr(), info


def synthetic_seeds(adj: torch.Tensor, info: dict, num_queries: int, seed: int = 1,
                    atom_seeds: int = 25, atom_weight: float = 0.1) -> torch.Tensor:
    """Sparse COO seeds [Q, N]: entities of 1-2 'answer' atoms plus similar atoms (weight 0.1 x cos)."""
    g = torch.Generator().manual_seed(seed)
    e, a = info["num_entities"], info["num_atoms"]
    crow, col = adj.crow_indices(), adj.col_indices()
    rows, cols, vals = [], [], []
    for q in range(num_queries):
        hops = 1 + int(torch.rand(1, generator=g) < 0.5)
        answer = torch.randint(0, a, (hops,), generator=g)
        ents = torch.cat([col[crow[e + x]: crow[e + x + 1]] for x in answer.tolist()])
        ents = torch.unique(ents[ents < e])[:20]
        if ents.numel():
            rows.append(torch.full((ents.numel(),), q))
            cols.append(ents)
            vals.append(0.3 + 0.7 * torch.rand(ents.numel(), generator=g))
        # 'similar' atoms: passage mates of the answers, then random atoms
        mates = torch.cat([torch.nonzero(info["atom_pass"] == info["atom_pass"][x]).squeeze(1) for x in answer])
        rand = torch.randint(0, a, (atom_seeds,), generator=g)
        atoms = torch.unique(torch.cat([mates, rand]))[:atom_seeds]
        rows.append(torch.full((atoms.numel(),), q))
        cols.append(atoms + e)
        vals.append(atom_weight * (0.5 + 0.5 * torch.rand(atoms.numel(), generator=g)))
    idx = torch.stack([torch.cat(rows), torch.cat(cols)])
    return torch.sparse_coo_tensor(idx, torch.cat(vals), (num_queries, e + a)).coalesce()


def real_graph(folder: str, num_queries: int, seed: int = 1, atom_seeds: int = 25,
               atom_weight: float = 0.1) -> tuple[torch.Tensor, dict, torch.Tensor]:
    """A saved Atom–Entity Graph (atomicrag.graph.io) and pseudo-queries on it.

    A query is the mean embedding of 1-2 random atoms: entity seeds are those atoms' entities
    (weight 1), atom seeds the 25 atoms most similar to the query (weight 0.1 x cosine), as the
    paper's seeding would produce for a question about those facts.
    """
    from atomicrag.graph.io import load_graph

    graph = load_graph(folder)
    adj = graph.adjacency.to_sparse_csr().float()
    e, a = graph.num_entities, graph.num_atoms
    emb = torch.nn.functional.normalize(graph.atom_embeddings.float(), dim=1)  # [A, d]
    g = torch.Generator().manual_seed(seed)
    crow, col = adj.crow_indices(), adj.col_indices()
    rows, cols, vals = [], [], []
    answers = torch.randint(0, a, (num_queries, 2), generator=g)
    two = torch.rand(num_queries, generator=g) < 0.5
    qv = torch.nn.functional.normalize(emb[answers[:, 0]] + two.float().unsqueeze(1) * emb[answers[:, 1]], dim=1)
    sim, top = (qv @ emb.T).topk(atom_seeds, dim=1)  # [Q, d] @ [d, A] -> [Q, A] -> [Q, 25]
    for q in range(num_queries):
        picked = answers[q, : 1 + int(two[q])].tolist()
        ents = torch.cat([col[crow[e + x]: crow[e + x + 1]] for x in picked])
        ents = torch.unique(ents[ents < e])[:20]
        rows += [torch.full((ents.numel(),), q), torch.full((atom_seeds,), q)]
        cols += [ents, top[q] + e]
        vals += [torch.ones(ents.numel()), atom_weight * sim[q].clamp_min(1e-3)]
    idx = torch.stack([torch.cat(rows), torch.cat(cols)])
    seeds = torch.sparse_coo_tensor(idx, torch.cat(vals), (num_queries, e + a)).coalesce()
    info = {"num_entities": e, "num_atoms": a, "undirected_edges": adj._nnz() // 2}
    return adj, info, seeds


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def igraph_graph(adj: torch.Tensor):
    import igraph as ig

    coo = adj.to_sparse_coo().coalesce()
    i, j = coo.indices()
    up = i < j
    g = ig.Graph(n=adj.shape[0], edges=torch.stack([i[up], j[up]], 1).tolist())
    g.es["weight"] = coo.values()[up].double().tolist()
    return g


def igraph_ppr(g, seeds_dense: torch.Tensor, restart: float) -> tuple[torch.Tensor, float, float]:
    """igraph PRPACK scores [S, N] of the given seed rows, wall and CPU seconds in total."""
    resets = [row.double().tolist() for row in seeds_dense]  # built outside the timer
    out, wall, cpu = [], 0.0, 0.0
    for reset in resets:
        t0, c0 = time.perf_counter(), time.thread_time()
        r = g.personalized_pagerank(vertices=None, directed=False, damping=1.0 - restart, reset=reset,
                                    weights="weight", implementation="prpack")
        wall += time.perf_counter() - t0
        cpu += time.thread_time() - c0
        out.append(torch.tensor(r))
    return torch.stack(out) if out else torch.zeros(0), wall, cpu


def agreement(a: torch.Tensor, b: torch.Tensor, ordered: bool = False) -> float:
    """Mean |top-k(a) ∩ top-k(b)| / k over rows ([S, k] index tensors); ``ordered``: same rank too."""
    k = a.shape[1]
    if ordered:
        return float((a == b).float().mean()) if a.numel() else 1.0
    hits = [len(set(x.tolist()) & set(y.tolist())) / k for x, y in zip(a, b)]
    return sum(hits) / max(len(hits), 1)


def solver_iterates(adj: torch.Tensor, seeds_s: torch.Tensor, restart: float, solver: str, max_steps: int):
    """Yield ``(step, y [N, S])`` of the power or CG solver, unnormalised, for every step count."""
    c = 1.0 - restart
    prep = prepare_graph(adj)
    s = seeds_s.to_dense().T.contiguous().double()  # [N, S]
    s = (s / s.sum(0).clamp_min(1e-30)).float()
    if solver in ("power", "chebyshev"):
        m = prep.transition_t(c)  # [N, N]: c A D^-1
        weights = chebyshev_weights(c, max_steps + 1) if solver == "chebyshev" else [1.0] * (max_steps + 1)
        y_prev, y = torch.zeros_like(s), s.clone()  # y_0 = 0, y_1 = s
        for step in range(1, max_steps + 1):
            y_prev = weights[step] * (m @ y + s) + (1.0 - weights[step]) * y_prev  # [N, N] @ [N, S]
            y, y_prev = y_prev, y
            yield step, y
        return
    dh = torch.where(prep.dangling, torch.ones_like(prep.deg), prep.deg.sqrt())  # [N]
    sym = prep.csr((prep.val.double() / (dh[prep.row] * dh[prep.col])).float())  # S = D^-1/2 A D^-1/2
    dh = dh.float().unsqueeze(1)  # [N, 1]
    z = torch.zeros_like(s)
    r = s / dh  # b = D^-1/2 s
    p = r.clone()
    rr = (r * r).sum(0)
    for step in range(1, max_steps + 1):
        t = p - c * (sym @ p)  # (I - cS) p: [N, S]
        alpha = torch.nan_to_num(rr / (p * t).sum(0))
        z = z + alpha * p
        r = r - alpha * t
        rr_new = (r * r).sum(0)
        p = r + torch.nan_to_num(rr_new / rr) * p
        rr = rr_new
        yield step, z * dh


def steps_for_exact(adj, seeds_s, ref_idx, e, k, restart, solver, max_steps) -> tuple[int | None, int | None]:
    """Fewest SpMM steps whose top-k atoms equal igraph's for every sampled query (as a set, and in order)."""
    as_set = in_order = None
    for step, y in solver_iterates(adj, seeds_s, restart, solver, max_steps):
        _, idx = topk_atoms((y / y.sum(0)).T, e, k)
        if as_set is None and agreement(idx, ref_idx) == 1.0:
            as_set = step
        if in_order is None and agreement(idx, ref_idx, ordered=True) == 1.0:
            in_order = step
        if as_set is not None and in_order is not None:
            break
    return as_set, in_order


def time_engine(engine, adj, seeds, e, k, reps: int = 1, cpu: bool = False, fused: bool = True):
    """Best wall seconds (and the CPU seconds of that run when ``cpu``) of propagate + top-k.

    fused: ``engine.topk`` (top-k straight from the propagation blocks, what retrieval uses);
    otherwise the full ``[Q, N]`` scores are built and then ``topk_atoms`` is applied.
    """
    best, best_cpu = float("inf"), 0.0
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        if fused:
            vals, idx = engine.topk(adj, seeds, e, k)  # [Q, k]
        else:
            scores = engine(adj, seeds)  # [Q, N]
            vals, idx = topk_atoms(scores, e, k)  # [Q, k]
            del scores
        if vals.is_cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        if wall < best:
            best, best_cpu = wall, time.process_time() - c0
    return (best, best_cpu, vals, idx) if cpu else (best, vals, idx)


def make_engine(args: argparse.Namespace, restart: float, **over) -> PPR:
    kw = {"restart": restart, "max_iter": args.iters, "device": args.device,
          "block_size": args.block_size, "reorder": {"auto": None, "on": True, "off": False}[args.reorder]}
    if args.solver:
        kw["solver"] = args.solver
    kw.update(over)
    return PPR(**kw)


def sweep(adj, seeds, e: int, args: argparse.Namespace, restart: float) -> None:
    """ms/query of the engine's CPU options on the same queries (what wins, and by how much)."""
    dev = torch.device(args.device)
    q = min(args.queries, args.sweep_queries)
    sb = seeds.index_select(0, torch.arange(q)).to(dev)
    adj = adj.to(dev)
    print(f"option sweep on {q} queries (ms/query, best of {args.reps}):")
    configs = [("power, one block (straight SpMM)", {"solver": "power", "block_size": q, "reorder": False}),
               ("power, one block, rcm", {"solver": "power", "block_size": q, "reorder": True}),
               ("chebyshev, one block", {"solver": "chebyshev", "block_size": q, "reorder": False}),
               ("chebyshev, one block, rcm", {"solver": "chebyshev", "block_size": q, "reorder": True}),
               (f"chebyshev, blocks of {q // 4}, rcm", {"solver": "chebyshev", "block_size": q // 4, "reorder": True}),
               ("cg, one block, rcm", {"solver": "cg", "block_size": q, "reorder": True})]
    for label, over in configs:
        eng = make_engine(args, restart, **over)
        eng(adj, sb.index_select(0, torch.arange(2, device=dev)))  # prepare (ordering) outside the timer
        t, _, _ = time_engine(eng, adj, sb, e, args.k, reps=args.reps)
        print(f"  {label:<48s} {1e3 * t / q:7.2f}  ({eng.last_steps} steps)", flush=True)


def run_scale(name: str, args: argparse.Namespace, restart: float) -> dict:
    t0 = time.perf_counter()
    if name == "real":
        adj, info, seeds = real_graph(args.graph, args.queries)
        e = info["num_entities"]
    else:
        e, a, rel, syn = SCALES[name]
        adj, info = synthetic_graph(e, a, rel, syn)
        seeds = synthetic_seeds(adj, info, args.queries)
    n = adj.shape[0]
    print(f"\n== {name}: {n:,} nodes, {info['undirected_edges']:,} undirected edges, "
          f"{args.queries} queries (built in {time.perf_counter() - t0:.1f}s, rss {rss_mb():.0f} MB)", flush=True)
    dev = torch.device(args.device)
    adj_d, seeds_d = adj.to(dev), seeds.to(dev)
    engine = make_engine(args, restart)
    if args.sweep and name == "hotpot":
        sweep(adj, seeds, e, args, restart)
    width = engine.block_width(engine._cache.get(adj_d), args.queries)
    warm = seeds_d.index_select(0, torch.arange(width, device=dev))
    engine.topk(adj_d, warm, e, args.k)  # prepare (ordering, operator) and allocate the work buffers
    # igraph on a sample, timed in two halves around the engine so that both see the same load
    n_sample = args.sample if name != "hotpot10x" else max(4, args.sample // 8)
    sample = torch.arange(min(n_sample, args.queries))
    dense_s = seeds.index_select(0, sample).to_dense()  # [S, N]
    g = igraph_graph(adj)
    half = len(sample) // 2
    ref1, w1, c1 = igraph_ppr(g, dense_s[:half], restart)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    rss0 = rss_mb()
    t_all, cpu_all, _, idx_all = time_engine(engine, adj_d, seeds_d, e, args.k, reps=args.reps, cpu=True)
    peak = (f"cuda peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MB" if dev.type == "cuda"
            else f"peak rss {rss_mb():.0f} MB (before engine {rss0:.0f} MB)")
    ref2, w2, c2 = igraph_ppr(g, dense_s[half:], restart)
    ref = torch.cat([x for x in (ref1, ref2) if x.numel()])
    t_ig, cpu_ig = (w1 + w2) / len(sample), (c1 + c2) / len(sample)
    ms_q, cpu_q = 1e3 * t_all / args.queries, 1e3 * cpu_all / args.queries
    t_full, _, _ = time_engine(engine, adj_d, seeds_d, e, args.k, reps=args.reps, fused=False)
    print(f"engine ({engine.solver}, blocks of {width}, "
          f"{engine.last_steps} SpMM steps for max_iter={args.iters}): "
          f"{t_all:.2f}s for {args.queries} queries = {ms_q:.2f} ms/query ({cpu_q:.2f} CPU-ms), "
          f"{args.queries / t_all:.0f} q/s; {peak}; with full [Q, N] scores then top-k: "
          f"{1e3 * t_full / args.queries:.2f} ms/query", flush=True)
    _, ref_idx = topk_atoms(ref.float(), e, args.k)
    agree = agreement(idx_all[: len(sample)].cpu(), ref_idx)
    agree_ord = agreement(idx_all[: len(sample)].cpu(), ref_idx, ordered=True)
    ratio = (t_ig * 1e3) / ms_q
    print(f"igraph prpack: {t_ig * 1e3:.1f} ms/query ({1e3 * cpu_ig:.1f} CPU-ms, {len(sample)} sampled)  "
          f"ratio {ratio:.1f}x (CPU-time ratio {cpu_ig * 1e3 / cpu_q:.1f}x)  top-{args.k} agreement {agree:.4f} "
          f"(same rank: {agree_ord:.4f})", flush=True)
    # throughput vs batch size
    tput = {}
    for b in args.batches:
        if b > args.queries:
            continue
        sb = seeds_d.index_select(0, torch.arange(b, device=dev))
        tb, _, _ = time_engine(engine, adj_d, sb, e, args.k, reps=args.reps)
        tput[b] = b / tb
    exact = {}
    if not args.quick:
        s_cpu = seeds.index_select(0, sample)
        for solver, mx in (("power", 100), ("chebyshev", 50), ("cg", 50)):
            exact[solver] = steps_for_exact(adj, s_cpu, ref_idx, e, args.k, restart, solver, mx)
        print(f"steps for igraph's exact top-{args.k} on all {len(sample)} sampled queries (as a set, in order): "
              f"power {exact['power']}, chebyshev {exact['chebyshev']}, cg {exact['cg']}", flush=True)
    return {"name": name, "ratio": ratio, "cpu_ratio": cpu_ig * 1e3 / cpu_q, "agree": agree,
            "agree_ord": agree_ord, "ms_q": ms_q, "tput": tput, "t_ig": t_ig, "peak": peak, "exact": exact}


def time_methods(args: argparse.Namespace) -> None:
    """Seconds per query of every propagator of Table 11 at the hotpot scale (random embeddings)."""
    from atomicrag.config import FidelityConfig, RetrieverConfig
    from atomicrag.retrieve.propagate import METHODS, build_propagator

    e, a, rel, syn = SCALES["hotpot"]
    adj, info = synthetic_graph(e, a, rel, syn)
    q = min(args.queries, 64)
    seeds = synthetic_seeds(adj, info, q)
    g = torch.Generator().manual_seed(0)
    kw = {"atom_embeddings": torch.nn.functional.normalize(torch.randn(a, 64, generator=g), dim=1),
          "query_embeddings": torch.nn.functional.normalize(torch.randn(q, 64, generator=g), dim=1),
          "num_entities": e}
    print(f"\nper-method time at the hotpot scale, {q} queries (Table 11 settings):")
    for name in METHODS:
        prop = build_propagator(RetrieverConfig(name=name, device=args.device), FidelityConfig())
        prop(adj, seeds.index_select(0, torch.arange(2)), **{**kw, "query_embeddings": kw["query_embeddings"][:2]})
        t0 = time.perf_counter()
        topk_atoms(prop(adj, seeds, **kw), e, args.k)
        dt = time.perf_counter() - t0
        print(f"  {name:<10s} {1e3 * dt / q:9.2f} ms/query", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="medium,hotpot,hotpot10x",
                    help="comma list of medium, hotpot, hotpot10x, real (real needs --graph)")
    ap.add_argument("--graph", default=None, help="folder of a saved Atom-Entity Graph for the 'real' scale")
    ap.add_argument("--queries", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=20, help="power-iteration steps whose accuracy is wanted")
    ap.add_argument("--restart", type=float, default=0.3,
                    help="restart probability (0.3: paper Eq. 7; 0.7: released code's igraph damping 0.3)")
    ap.add_argument("--solver", default=None, choices=["chebyshev", "cg", "power"],
                    help="default: the engine's own default")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sample", type=int, default=64, help="queries timed with igraph (1/8 of it at 10x)")
    ap.add_argument("--batches", default="64,256,1024")
    ap.add_argument("--k", type=int, default=25)
    ap.add_argument("--reps", type=int, default=2, help="engine timings: best of this many runs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="small sample, skip the exact-steps search")
    ap.add_argument("--block-size", type=int, default=None, help="queries per block (default: cache-sized)")
    ap.add_argument("--reorder", default="auto", choices=["auto", "on", "off"], help="RCM node order")
    ap.add_argument("--sweep", action="store_true", help="compare the engine options at the hotpot scale")
    ap.add_argument("--sweep-queries", type=int, default=1024)
    ap.add_argument("--methods", action="store_true", help="also time every propagator (64 queries, hotpot)")
    args = ap.parse_args()
    args.batches = [int(x) for x in args.batches.split(",")]
    if args.quick:
        args.sample = min(args.sample, 16)
    torch.set_num_threads(args.threads)
    if args.methods:
        time_methods(args)
    results = [run_scale(s, args, args.restart) for s in args.scales.split(",")]
    print(f"\nrestart={args.restart} max_iter={args.iters} solver={args.solver or 'default'} device={args.device} "
          f"threads={args.threads}")
    head = "scale       igraph ms/q  engine ms/q  ratio  CPU-ratio  top25   ranked  " + "  ".join(
        f"q/s@B={b:<5d}" for b in args.batches)
    print(head)
    for r in results:
        cols = "  ".join(f"{r['tput'].get(b, float('nan')):>10.0f}" for b in args.batches)
        print(f"{r['name']:<11s} {r['t_ig'] * 1e3:>11.1f}  {r['ms_q']:>11.2f}  {r['ratio']:>5.1f}  "
              f"{r['cpu_ratio']:>9.1f}  {r['agree']:.4f}  {r['agree_ord']:.4f}  {cols}")
    for r in results:
        print(f"{r['name']}: {r['peak']}; exact-top25 steps {r['exact'] or 'not measured'}")
    hot = next((r for r in results if r["name"] == "hotpot"), results[-1])
    print(f"ratio_vs_igraph={hot['ratio']:.2f} top25_agreement={hot['agree']:.4f}")


if __name__ == "__main__":
    main()
