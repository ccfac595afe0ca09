"""Benchmark of batched PPR against python-igraph (prints figures; not a timed test).

Graphs: synthetic Atom–Entity Graphs at the paper's scales (``benchmarks/synthetic_graphs.py``: medium = Graph-Bench
Medical, hotpot = HotpotQA, hotpot10x) or a saved graph (``--scales real --graph DIR``).

The baseline is made trustworthy before any ratio is printed: igraph (PRPACK, one query at a
time) is warmed up, then timed query by query on ``--sample`` queries split in two halves around
the engine runs (both see the same machine load); its figure is the *median* per-query time,
printed with its spread (p10-p90). The engine propagates all ``--queries`` together, ``--reps``
times; its figure is the median run's time divided by the queries, printed with min-max.

Engine stop modes, all in the same run: ``topk`` (default: a query stops once its top-25 set is
certified exact by the residual bound, ``certify.py``), ``accuracy`` (stop at the error of
``--iters`` power steps) and ``fixed`` (exactly ``--iters`` plain power steps: exact reproduction).
Top-25 agreement of every mode with igraph on the sample (if igraph is missing, with a float64
power iteration to 1e-10 instead), B = 1 latency (median over single queries), queries/second by
batch size, peak memory, and (unless ``--quick``) the fewest steps that give the exact top-25.

The last line is ``ratio_vs_igraph=<x> top25_agreement=<y> b1_ms=<z>`` for the hotpot scale
(``topk`` mode).

    .venv/bin/python scripts/bench.py retrieval --scales medium,hotpot,hotpot10x --queries 1024
    .venv/bin/python scripts/bench.py retrieval --quick --sample 32   # no exact-steps search
    .venv/bin/python scripts/bench.py retrieval --device cuda --scales hotpot,hotpot10x
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_graphs import SCALES, real_graph, synthetic_graph, synthetic_seeds

from atomicrag.retrieve.propagate import PPR, topk_atoms
from atomicrag.retrieve.propagate.base import prepare_graph
from atomicrag.retrieve.propagate.solvers import chebyshev_weights


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


def igraph_ppr(g, seeds_dense: torch.Tensor, restart: float) -> tuple[torch.Tensor, list[float], float]:
    """igraph PRPACK scores [S, N] of the given seed rows, per-query wall seconds, total CPU seconds."""
    resets = [row.double().tolist() for row in seeds_dense]  # built outside the timer
    out, walls, cpu = [], [], 0.0
    for reset in resets:
        t0, c0 = time.perf_counter(), time.thread_time()
        r = g.personalized_pagerank(vertices=None, directed=False, damping=1.0 - restart, reset=reset,
                                    weights="weight", implementation="prpack")
        walls.append(time.perf_counter() - t0)
        cpu += time.thread_time() - c0
        out.append(torch.tensor(r))
    return torch.stack(out) if out else torch.zeros(0), walls, cpu


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))] if s else float("nan")


def exact_reference(adj: torch.Tensor, seeds: torch.Tensor, restart: float) -> torch.Tensor:
    """Scores [S, N] by float64 power iteration to an L1 change of 1e-10 (when igraph is missing)."""
    eng = PPR(restart, max_iter=1000, tol=1e-10, solver="power", dtype="float64", device=str(adj.device),
              stop="accuracy")
    return eng(adj, seeds).float().cpu()


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


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_engine(engine, adj, seeds, e, k, reps: int = 1, fused: bool = True) -> dict:
    """Wall and CPU seconds of every one of ``reps`` runs of propagate + top-k, and the last result.

    fused: ``engine.topk`` (top-k straight from the propagation blocks, what retrieval uses);
    otherwise the full ``[Q, N]`` scores are built and then ``topk_atoms`` is applied.
    """
    walls, cpus = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        if fused:
            vals, idx = engine.topk(adj, seeds, e, k)  # [Q, k]
        else:
            scores = engine(adj, seeds)  # [Q, N]
            vals, idx = topk_atoms(scores, e, k)  # [Q, k]
            del scores
        sync(vals.device)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    med = sorted(range(reps), key=lambda r: walls[r])[reps // 2]
    return {"wall": walls[med], "cpu": cpus[med], "min": min(walls), "max": max(walls), "idx": idx,
            "steps": engine.last_steps}


MODES = {"topk": {"stop": "topk"}, "accuracy": {"stop": "accuracy"}, "fixed": {"solver": "power", "stop": "accuracy"}}


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
    print(f"option sweep on {q} queries (ms/query, median of {args.reps}):")
    configs = [("power, one block (straight SpMM)", {"solver": "power", "block_size": q, "reorder": False}),
               ("power, one block, rcm", {"solver": "power", "block_size": q, "reorder": True}),
               ("chebyshev, one block", {"solver": "chebyshev", "block_size": q, "reorder": False}),
               ("chebyshev, one block, rcm", {"solver": "chebyshev", "block_size": q, "reorder": True}),
               (f"chebyshev, blocks of {q // 4}, rcm", {"solver": "chebyshev", "block_size": q // 4, "reorder": True}),
               ("cg, one block, rcm", {"solver": "cg", "block_size": q, "reorder": True})]
    for label, over in configs:
        eng = make_engine(args, restart, **over)
        eng(adj, sb.index_select(0, torch.arange(2, device=dev)))  # prepare (ordering) outside the timer
        r = time_engine(eng, adj, sb, e, args.k, reps=args.reps)
        print(f"  {label:<48s} {1e3 * r['wall'] / q:7.2f}  ({r['steps']} steps)", flush=True)


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
    engines = {mode: make_engine(args, restart, **over) for mode, over in MODES.items()}
    if args.sweep and name == "hotpot":
        sweep(adj, seeds, e, args, restart)
    engine = engines["topk"]
    width = engine.block_width(engine._cache.get(adj_d), args.queries)
    warm = seeds_d.index_select(0, torch.arange(width, device=dev))
    for eng in engines.values():  # prepare (ordering, operator) and allocate the work buffers
        eng.topk(adj_d, warm, e, args.k)
    n_sample = min(args.sample if name != "hotpot10x" else max(8, args.sample // 8), args.queries)
    sample = torch.arange(n_sample)
    dense_s = seeds.index_select(0, sample).to_dense()  # [S, N]
    try:
        g = igraph_graph(adj)
    except ImportError:
        g = None
        print("python-igraph is not installed: no igraph timing; agreement is against float64 power "
              "iteration to 1e-10", flush=True)
    half = n_sample // 2
    ig_walls: list[float] = []
    ig_cpu = 0.0
    refs = []
    if g is not None:
        igraph_ppr(g, dense_s[: min(3, n_sample)], restart)  # warm-up: PRPACK's first calls allocate
        ref, w, c = igraph_ppr(g, dense_s[:half], restart)
        refs.append(ref)
        ig_walls += w
        ig_cpu += c
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    rss0 = rss_mb()
    runs = {mode: time_engine(eng, adj_d, seeds_d, e, args.k, reps=args.reps if mode == "topk" else max(1, args.reps // 2))
            for mode, eng in engines.items()}
    peak = (f"cuda peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MB" if dev.type == "cuda"
            else f"peak rss {rss_mb():.0f} MB (before engine {rss0:.0f} MB)")
    if g is not None:
        ref, w, c = igraph_ppr(g, dense_s[half:], restart)
        refs.append(ref)
        ig_walls += w
        ig_cpu += c
        ref = torch.cat([x for x in refs if x.numel()])
    else:
        ref = exact_reference(adj_d, seeds_d.index_select(0, sample.to(dev)), restart)
    _, ref_idx = topk_atoms(ref.float(), e, args.k)
    q = args.queries
    run = runs["topk"]
    ms_q, cpu_q = 1e3 * run["wall"] / q, 1e3 * run["cpu"] / q
    full = time_engine(engine, adj_d, seeds_d, e, args.k, reps=max(1, args.reps // 2), fused=False)
    agree = {mode: agreement(r["idx"][:n_sample].cpu(), ref_idx) for mode, r in runs.items()}
    agree_ord = agreement(run["idx"][:n_sample].cpu(), ref_idx, ordered=True)
    print(f"engine (chebyshev, blocks of {width}, max_iter={args.iters}), {q} queries, median of {args.reps}:")
    for mode, r in runs.items():
        print(f"  stop={mode:<9s} {1e3 * r['wall'] / q:8.3f} ms/query (min {1e3 * r['min'] / q:.3f}, "
              f"max {1e3 * r['max'] / q:.3f}; {1e3 * r['cpu'] / q:.3f} CPU-ms), {q / r['wall']:.0f} q/s, "
              f"{r['steps']} steps, top-{args.k} agreement {agree[mode]:.4f}", flush=True)
    print(f"  full [Q, N] scores then top-k (accuracy stop): {1e3 * full['wall'] / q:.3f} ms/query; {peak}")
    # B = 1 latency: single queries one after another (what an interactive user sees)
    singles = [seeds_d.index_select(0, torch.tensor([i], device=dev)) for i in range(min(args.b1, q))]
    for s1 in singles[:2]:
        engine.topk(adj_d, s1, e, args.k)  # buffers of width 1
    b1 = []
    for s1 in singles:
        t1 = time.perf_counter()
        engine.topk(adj_d, s1, e, args.k)
        sync(dev)
        b1.append(time.perf_counter() - t1)
    b1_ms = 1e3 * quantile(b1, 0.5)
    print(f"B=1 latency over {len(b1)} queries: median {b1_ms:.2f} ms (p10 {1e3 * quantile(b1, 0.1):.2f}, "
          f"p90 {1e3 * quantile(b1, 0.9):.2f})", flush=True)
    ratio = cpu_ratio = t_ig = float("nan")
    if g is not None:
        t_ig = quantile(ig_walls, 0.5)
        ratio = (t_ig * 1e3) / ms_q
        cpu_ratio = (1e3 * ig_cpu / n_sample) / cpu_q
        print(f"igraph prpack, {n_sample} queries after warm-up: median {t_ig * 1e3:.1f} ms/query "
              f"(p10 {1e3 * quantile(ig_walls, 0.1):.1f}, p90 {1e3 * quantile(ig_walls, 0.9):.1f}; "
              f"mean CPU {1e3 * ig_cpu / n_sample:.1f} ms)  ratio {ratio:.1f}x (CPU-time ratio {cpu_ratio:.1f}x, "
              f"B=1 ratio {1e3 * t_ig / b1_ms:.1f}x)  top-{args.k} agreement {agree['topk']:.4f} "
              f"(same rank: {agree_ord:.4f})", flush=True)
    tput = {}
    for b in args.batches:
        if b > q:
            continue
        sb = seeds_d.index_select(0, torch.arange(b, device=dev))
        tput[b] = b / time_engine(engine, adj_d, sb, e, args.k, reps=args.reps)["wall"]
    exact = {}
    if not args.quick:
        s_cpu = seeds.index_select(0, sample)
        for solver, mx in (("power", 100), ("chebyshev", 50), ("cg", 50)):
            exact[solver] = steps_for_exact(adj, s_cpu, ref_idx, e, args.k, restart, solver, mx)
        print(f"steps for the exact top-{args.k} on all {n_sample} sampled queries (as a set, in order): "
              f"power {exact['power']}, chebyshev {exact['chebyshev']}, cg {exact['cg']}", flush=True)
    return {"name": name, "ratio": ratio, "cpu_ratio": cpu_ratio, "agree": agree["topk"], "agree_ord": agree_ord,
            "ms_q": ms_q, "tput": tput, "t_ig": t_ig, "peak": peak, "exact": exact, "b1_ms": b1_ms,
            "ms_modes": {m: 1e3 * r["wall"] / q for m, r in runs.items()}}


def time_methods(args: argparse.Namespace) -> None:
    """Seconds per query of every propagator of Table 11 at the hotpot scale (random embeddings)."""
    from atomicrag.core.compose import load_config
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
        # the paper's retriever settings (conf/retriever/ppr) with this propagator
        cfg = load_config({"retriever": "ppr"}, overrides=[f"retriever.name={name}", f"retriever.device={args.device}"])
        prop = build_propagator(cfg.retriever)
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
    ap.add_argument("--sample", type=int, default=200, help="queries timed with igraph (1/8 of it at 10x)")
    ap.add_argument("--b1", type=int, default=32, help="single queries timed for the B=1 latency")
    ap.add_argument("--batches", default="64,256,1024")
    ap.add_argument("--k", type=int, default=25)
    ap.add_argument("--reps", type=int, default=5, help="engine timings: median of this many runs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="skip the exact-steps search")
    ap.add_argument("--block-size", type=int, default=None, help="queries per block (default: cache-sized)")
    ap.add_argument("--reorder", default="auto", choices=["auto", "on", "off"], help="RCM node order")
    ap.add_argument("--sweep", action="store_true", help="compare the engine options at the hotpot scale")
    ap.add_argument("--sweep-queries", type=int, default=1024)
    ap.add_argument("--methods", action="store_true", help="also time every propagator (64 queries, hotpot)")
    args = ap.parse_args()
    args.batches = [int(x) for x in args.batches.split(",")]
    torch.set_num_threads(args.threads)
    if args.methods:
        time_methods(args)
    results = [run_scale(s, args, args.restart) for s in args.scales.split(",")]
    print(f"\nrestart={args.restart} max_iter={args.iters} solver={args.solver or 'default'} device={args.device} "
          f"threads={args.threads} load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    head = ("scale       igraph ms/q  topk ms/q  accuracy  fixed   ratio  CPU-ratio  top25   ranked  B=1 ms  "
            + "  ".join(f"q/s@B={b:<5d}" for b in args.batches))
    print(head)
    for r in results:
        cols = "  ".join(f"{r['tput'].get(b, float('nan')):>10.0f}" for b in args.batches)
        m = r["ms_modes"]
        print(f"{r['name']:<11s} {r['t_ig'] * 1e3:>11.1f}  {m['topk']:>9.3f}  {m['accuracy']:>8.3f}  {m['fixed']:>6.3f}  "
              f"{r['ratio']:>5.1f}  {r['cpu_ratio']:>9.1f}  {r['agree']:.4f}  {r['agree_ord']:.4f}  {r['b1_ms']:>6.2f}  {cols}")
    for r in results:
        print(f"{r['name']}: {r['peak']}; exact-top25 steps {r['exact'] or 'not measured'}")
    hot = next((r for r in results if r["name"] == "hotpot"), results[-1])
    print(f"ratio_vs_igraph={hot['ratio']:.2f} top25_agreement={hot['agree']:.4f} b1_ms={hot['b1_ms']:.2f}")


if __name__ == "__main__":
    main()
