#!/usr/bin/env python
"""The measurements of ``scripts/device_check.sh``, one subcommand per GPU path (prints figures; the
last line of each is its headline; a check that cannot measure exits non-zero, it never skips).

  exact    the float64 exact PPR solve (retriever.ppr_solve=exact) on the device against the CPU
  knn      entity KNN (``graph.synonyms.synonym_edges``: torch blocks; the image has no GPU index)
           at each of ``--entities`` (200k, 1M): pairs/s on the device vs the CPU on a slice, the
           edges equal on the slice
  embed    the project's ``TransformersEmbedder`` on bge-large's architecture with random weights
           (no download) in fp32/fp16/bf16, configured at 2,048 tokens: tokens/s, the clamp to 512
  harness  an end-to-end ``atomicrag.run`` with the fake LLM, embedder/graph/retriever on the device
  memory   the run plan's GPU memory per part beside ``torch.cuda.max_memory_allocated``

Imports: torch and numpy (and transformers for embed) for the kernels; harness and memory read the
config, so they need hydra-core/omegaconf (the device check's wheelhouse brings them).

    python scripts/bench.py device knn --device cuda --entities 200000,1000000
    python scripts/bench.py device embed --device cpu --small --texts 64
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def knn_once(e: int, args: argparse.Namespace) -> bool:
    from atomicrag.graph.synonyms import synonym_edges

    g = torch.Generator().manual_seed(0)
    x = torch.randn(e, args.dim, generator=g)
    x[1::2] = x[::2][: e // 2] + 0.3 * torch.randn(e // 2, args.dim, generator=g)  # synonym pairs
    keys = [f"entity {i}" for i in range(e)]
    kw = {"threshold": 0.8, "max_neighbors": 10, "min_alnum": 4, "batch": args.batch}
    dev = torch.device(args.device)
    synonym_edges(keys[:4096], x[:4096], device=args.device, **kw)  # warm-up (kernels, allocator)
    sync(dev)
    t0 = time.perf_counter()
    edges = synonym_edges(keys, x, device=args.device, **kw)
    sync(dev)
    t_dev = time.perf_counter() - t0
    m = min(e, args.cpu_slice)
    t0 = time.perf_counter()
    cpu = synonym_edges(keys[:m], x[:m], device="cpu", **kw)
    t_cpu = time.perf_counter() - t0
    on_dev = synonym_edges(keys[:m], x[:m], device=args.device, **kw)
    equal = torch.equal(cpu.src, on_dev.src) and torch.equal(cpu.dst, on_dev.dst)
    # exact KNN is quadratic: compare per-pair rates (entities^2 / s)
    rate_dev, rate_cpu = e * e / t_dev, m * m / t_cpu
    print(f"knn on {args.device}: {e:,} entities x {args.dim} d in {t_dev:.2f} s -> {edges.src.numel():,} edges; "
          f"cpu {m:,} entities in {t_cpu:.2f} s; edges equal on the slice: {equal}", flush=True)
    print(f"knn_{e} pairs_per_s_device={rate_dev:.3g} cpu={rate_cpu:.3g} ratio={rate_dev / rate_cpu:.1f}", flush=True)
    return equal and edges.src.numel() > 0


def bench_knn(args: argparse.Namespace) -> None:
    sizes = [int(x) for x in args.entities.split(",")]
    ok = [knn_once(e, args) for e in sizes]
    print(f"knn sizes {','.join(map(str, sizes))}: {'ok' if all(ok) else 'FAILED (edges differ or none)'}")
    if not all(ok):
        sys.exit(1)


# bge-large-en-v1.5's architecture (BertModel: 24 layers, 1024 wide, 16 heads, 4096 FFN, 512 positions,
# 335M parameters), and a small one of the same kind for the CPU dry run. Built from the config with
# random weights: no model hub, no download; FLOPs per token are the real model's.
BGE_LARGE = {"vocab_size": 30522, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
             "intermediate_size": 4096, "max_position_embeddings": 512, "type_vocab_size": 2}
SMALL = {"vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 128, "max_position_embeddings": 64, "type_vocab_size": 2}


def random_bert_folder(folder: Path, shape: dict, dev: torch.device) -> Path:
    """A local model folder (config, fp16 safetensors, a WordPiece vocabulary of 'w<i>' words) that
    ``embed.encoders.TransformersEmbedder`` loads like a downloaded one; reused when already there."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    if (folder / "config.json").is_file() and (folder / "vocab.txt").is_file():
        return folder
    tmp = folder.with_name(folder.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    with torch.device(dev):  # initialise on the device: 335M normal draws on a CPU take seconds
        model = BertModel(BertConfig(**shape))
    model.half().cpu().save_pretrained(tmp, safe_serialization=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = [f"w{i}" for i in range(shape["vocab_size"] - len(specials))]
    (tmp / "vocab.txt").write_text("\n".join(specials + words) + "\n")
    # no model_max_length: the clamp must come from the position table, as for a tokenizer that
    # declares none (configured 2,048 past bge-large's 512 positions is a device-side assert)
    BertTokenizerFast(vocab_file=str(tmp / "vocab.txt"), do_lower_case=True).save_pretrained(tmp)
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    tmp.replace(folder)
    return folder


def embed_texts(n: int, vocab: int, long_words: int, seed: int = 0) -> list[str]:
    """``n`` atom-like texts of 12-64 words and 8 of ``long_words`` words (past the position table)."""
    g = torch.Generator().manual_seed(seed)
    hi = vocab - 5
    lengths = torch.randint(12, 64, (n,), generator=g).tolist() + [long_words] * 8
    return [" ".join(f"w{int(i)}" for i in torch.randint(0, hi, (ln,), generator=g)) for ln in lengths]


def bench_embed(args: argparse.Namespace) -> None:
    """Tokens/s of the project's ``TransformersEmbedder`` (its length batches, its clamp) on a
    bge-large-shaped encoder in fp32, fp16 and bf16; each reduced precision's vectors against fp32's.
    Fails when the clamp did not hold, a vector is not finite, or a cosine to fp32 is under 0.98."""
    from atomicrag.embed.encoders import TransformersEmbedder

    dev = torch.device(args.device)
    shape = SMALL if args.small else BGE_LARGE
    positions = shape["max_position_embeddings"]
    folder = random_bert_folder(Path(args.work) / ("bert_small" if args.small else "bge_large_random"), shape, dev)
    texts = embed_texts(args.texts, shape["vocab_size"], long_words=4 * positions)
    out, ok = {}, True
    for label in ("fp32", "fp16", "bf16"):
        emb = TransformersEmbedder(str(folder), pooling="cls", max_length=2048, batch_size=args.batch,
                                   device=args.device, precision=label)
        clamp_ok = emb.max_length == positions
        emb.encode(texts[: args.batch])  # warm-up: kernels, allocator, cuBLAS handles
        sync(dev)
        t0 = time.perf_counter()
        vec = emb.encode(texts)
        sync(dev)
        secs = time.perf_counter() - t0
        tokens = sum(min(len(t.split()) + 2, emb.max_length) for t in texts)
        out[label] = vec
        cos = float((vec * out["fp32"]).sum(1).min())
        finite = bool(torch.isfinite(vec).all())
        ok &= clamp_ok and finite and cos >= 0.98
        print(f"embed {label} on {args.device}: {tokens / secs:,.0f} tokens/s ({len(texts):,} texts, {tokens:,} tokens "
              f"in {secs:.2f} s); max_length 2048 clamped to {emb.max_length} (positions {positions}): "
              f"{'ok' if clamp_ok else 'NOT CLAMPED'}; finite={finite}; min cosine to fp32 {cos:.5f}", flush=True)
        out[label + "_rate"] = tokens / secs
        del emb
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    print(f"embed_tokens_per_s fp32={out['fp32_rate']:.0f} fp16={out['fp16_rate']:.0f} bf16={out['bf16_rate']:.0f} "
          f"clamp={positions} {'ok' if ok else 'FAILED'}")
    if not ok:
        sys.exit(1)

def check_exact(args: argparse.Namespace) -> None:
    """The float64 exact PPR solve (``retriever.ppr_solve=exact``) on the device against the same
    solve on the CPU for a slice of the queries: agreement of the scores and the top-25 sets."""
    from atomicrag.retrieve.propagate.ppr import PPR

    dev = torch.device(args.device)
    g = torch.Generator().manual_seed(0)
    n, q, k = args.nodes, args.queries, 25
    src = torch.randint(0, n, (4 * n,), generator=g)
    dst = torch.randint(0, n, (4 * n,), generator=g)
    keep = src != dst
    idx = torch.stack([torch.cat([src[keep], dst[keep]]), torch.cat([dst[keep], src[keep]])])
    w = 0.5 + torch.rand(int(keep.sum()), generator=g)
    adj = torch.sparse_coo_tensor(idx, torch.cat([w, w]), (n, n)).coalesce().to_sparse_csr()
    seeds = torch.zeros(q, n)
    for i in range(q):
        seeds[i, torch.randperm(n, generator=g)[:8]] = torch.rand(8, generator=g)
    exact = dict(restart=0.1, max_iter=1000, tol=1e-10, solver="power", dtype=torch.float64, stop="accuracy")
    t0 = time.perf_counter()
    on_dev = PPR(device=args.device, **exact)(adj, seeds)
    sync(dev)
    secs = time.perf_counter() - t0
    part = slice(0, min(q, args.cpu_slice))
    on_cpu = PPR(device="cpu", **exact)(adj, seeds[part])
    got = on_dev[part].double().cpu()
    diff = (got - on_cpu).abs().max().item()
    same = sum(set(got[i].topk(k).indices.tolist()) == set(on_cpu[i].topk(k).indices.tolist())
               for i in range(on_cpu.shape[0]))
    print(f"exact_ppr float64 nodes={n} queries={q} device_s={secs:.2f} max_abs_diff={diff:.2e} "
          f"top{k}_identical={same}/{on_cpu.shape[0]} dtype={on_dev.dtype}")
    if on_dev.dtype != torch.float64 or diff > 1e-8:
        sys.exit(1)


def harness_run(args: argparse.Namespace) -> None:
    """An end-to-end harness run (``python -m atomicrag.run``) with the fake LLM on the device: a
    random small BERT as the embedder (``embedder.name=transformers``), graph and retrieval on
    ``--device``. Fails unless the run writes its metrics.json with every question answered."""
    import json
    import subprocess

    work = Path(args.work)
    dev = torch.device(args.device)
    folder = random_bert_folder(work / "bert_small", SMALL, dev)
    runs = work / "harness_runs"
    cmd = [sys.executable, "-m", "atomicrag.run", "llm=fake", "atomizer=llm", "retriever.query_entities=llm",
           f"dataset.limit={args.questions}", "baselines=[]", "embedder.name=transformers",
           f"embedder.model={folder}", "embedder.pooling=cls", f"embedder.device={args.device}",
           f"graph.device={args.device}", f"retriever.device={args.device}",
           f"paths.results_dir={runs}", f"paths.cache_dir={work / 'harness_cache'}",
           f"paths.llm_cache={work / 'harness_cache' / 'llm.sqlite'}"]
    print("+ " + " ".join(cmd), flush=True)
    env = {**os.environ, "ATOMICRAG_NO_PROGRESS": "1", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, check=False)
    secs = time.perf_counter() - t0
    found = sorted(runs.rglob("metrics.json"))
    if proc.returncode != 0 or not found:
        print(f"harness run failed: rc={proc.returncode}, metrics.json files: {len(found)}")
        sys.exit(1)
    metrics = json.loads(found[-1].read_text())
    n, status = metrics.get("n_questions"), metrics.get("status")
    composed = metrics.get("provenance", {}).get("config", {})
    devices = {part: composed.get(part, {}).get("device") for part in ("embedder", "graph", "retriever")}
    if status != "finished" or n != args.questions or metrics.get("error_rate") or set(devices.values()) != {args.device}:
        print(f"harness run incomplete: status={status}, questions {n} of {args.questions}, "
              f"error rate {metrics.get('error_rate')}, devices {devices}")
        sys.exit(1)
    print(f"harness_run device={args.device} rc=0 in {secs:.1f} s: {found[-1].parent.name}, {n} questions, "
          f"status {status}, devices {devices}")


def measure(dev: torch.device, fn: Any) -> tuple[Any, int]:
    """(fn(), the peak bytes it allocated on ``dev`` beyond what was allocated before). On CUDA
    ``torch.cuda.max_memory_allocated``; on the CPU (dry run) the growth of the peak resident set,
    a coarse stand-in that only shows the plumbing works."""
    import resource

    if dev.type == "cuda":
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fn()
        torch.cuda.synchronize()
        return out, torch.cuda.max_memory_allocated() - base
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = fn()
    return out, max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before)


def memory_vs_plan(args: argparse.Namespace) -> None:
    """The run plan's GPU memory per part (``harness.plan.gpu_estimate``) beside what each part
    allocates on the device: the bge-large-shaped embedder's weights and one full batch of its
    activations (fp16, max_length 512), the atom vectors, the graph (CSR) and the PPR blocks of one
    ``retriever.query_batch``, on a synthetic graph of HotpotQA's size (``synthetic_graphs.SCALES``)."""
    import dataclasses

    from synthetic_graphs import SCALES, synthetic_graph, synthetic_seeds

    from atomicrag.core.compose import load_config
    from atomicrag.embed.encoders import TransformersEmbedder
    from atomicrag.harness.plan import gpu_estimate
    from atomicrag.retrieve.propagate import build_propagator, propagate_topk

    dev = torch.device(args.device)
    shape = SMALL if args.small else BGE_LARGE
    scale = "medium" if args.small else "hotpot"
    e, a, rel, syn = SCALES[scale]
    batch = 8 if args.small else 128
    qb = 64 if args.small else 1024
    # the paper's embedder (conf/embedder/bge_large) in the project's encoder, one 512-token batch
    # per call; the paper's PPR (conf/retriever/ppr) with one query batch
    cfg = load_config({"embedder": "bge_large", "retriever": "ppr"},
                      overrides=["embedder.name=transformers", "embedder.max_length=512", f"embedder.batch_size={batch}",
                                 "embedder.precision=fp16", f"retriever.query_batch={qb}"])
    plan = gpu_estimate(cfg, a)
    folder = random_bert_folder(Path(args.work) / ("bert_small" if args.small else "bge_large_random"), shape, dev)
    measured: dict[str, int] = {}
    encoder, measured["embedder_weights"] = measure(dev, lambda: TransformersEmbedder(
        str(folder), pooling="cls", max_length=512, batch_size=batch, device=args.device, precision="fp16"))
    # one full batch of texts past the position table: every text is max_length tokens
    full = embed_texts(batch, shape["vocab_size"], long_words=4 * shape["max_position_embeddings"])[-8:] * (batch // 8)
    _, measured["embedder_activations"] = measure(dev, lambda: encoder.encode(full))
    encoder = None  # free the weights before the graph parts are measured
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    adj, info = synthetic_graph(e, a, rel, syn)
    seeds = synthetic_seeds(adj, info, qb)
    vectors, measured["atom_vectors"] = measure(dev, lambda: torch.randn(a, shape["hidden_size"], device=dev))
    adj_d, measured["graph"] = measure(dev, lambda: adj.to(dev))
    prop = build_propagator(dataclasses.replace(cfg.retriever, device=args.device))
    seeds_d = seeds.to(dev)
    _, measured["ppr_blocks"] = measure(dev, lambda: propagate_topk(prop, adj_d, seeds_d, e, 25, query_batch=qb))
    how = "torch.cuda.max_memory_allocated" if dev.type == "cuda" else "peak RSS growth (CPU dry run: coarse)"
    print(f"plan vs measured GPU memory ({how}); {scale} scale: {a:,} atoms, {e:,} entities, query_batch {qb}, "
          f"embedder batch {batch} x 512 tokens fp16 (bge-large shape: {not args.small})")
    print(f"  {'part':<22s} {'plan MiB':>10s} {'measured MiB':>13s} {'measured/plan':>14s}")
    for part, planned_bytes in plan.items():
        got = measured.get(part)
        ratio = got / planned_bytes if got is not None and planned_bytes else float("nan")
        print(f"  {part:<22s} {planned_bytes / 2**20:>10.1f} {(got or 0) / 2**20:>13.1f} {ratio:>14.2f}")
    total_p, total_m = sum(plan.values()), sum(measured.values())
    print(f"memory_plan_mib={total_p / 2**20:.0f} measured_mib={total_m / 2**20:.0f} ratio={total_m / total_p:.2f}")
    del vectors


def main() -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--device", default="cuda")
    common.add_argument("--work", default=os.environ.get("DEVICE_CHECK_WORK", "/tmp/device_check_work"),
                        help="scratch folder (random model folders, harness runs), shared by the steps")
    common.add_argument("--small", action="store_true", help="the CPU dry run's sizes")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    k = sub.add_parser("knn", parents=[common])
    k.add_argument("--entities", default="200000,1000000", help="comma list of entity counts")
    k.add_argument("--dim", type=int, default=384)
    k.add_argument("--batch", type=int, default=8192)
    k.add_argument("--cpu-slice", type=int, default=20_000)
    e = sub.add_parser("embed", parents=[common])
    e.add_argument("--texts", type=int, default=8192)
    e.add_argument("--batch", type=int, default=128)
    x = sub.add_parser("exact", parents=[common])
    x.add_argument("--nodes", type=int, default=200_000)
    x.add_argument("--queries", type=int, default=256)
    x.add_argument("--cpu-slice", type=int, default=16)
    h = sub.add_parser("harness", parents=[common])
    h.add_argument("--questions", type=int, default=8)
    sub.add_parser("memory", parents=[common])
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"--device {args.device}: CUDA is not available (torch {torch.__version__}); use --device cpu")
        sys.exit(1)
    print(f"torch {torch.__version__}, device {args.device}"
          + (f" ({torch.cuda.get_device_name()})" if args.device.startswith("cuda") else ""), flush=True)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    {"knn": bench_knn, "embed": bench_embed, "exact": check_exact, "harness": harness_run,
     "memory": memory_vs_plan}[args.what](args)


if __name__ == "__main__":
    main()
