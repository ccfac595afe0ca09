#!/usr/bin/env python
"""Accelerator micro-benchmarks for ``scripts/device_check.sh`` (needs only torch; prints figures).

  knn    synonym KNN (``atomicrag.graph.synonyms.synonym_edges``) over random entity embeddings:
         entities/s on the device vs the CPU on a slice (same process), edges equal on the slice.
  embed  encoder throughput in fp32 vs bf16 vs fp16 (tokens/s) with a MiniLM-shaped encoder
         (6 layers, 384 wide, 12 heads, 1536 FFN): the offline MiniLM weights when
         transformers and the package are present, else a randomly initialised encoder of the
         same shape (same FLOPs per token; the cosine figure then compares random encoders).

    python scripts/bench_device.py knn --device cuda --entities 1000000
    python scripts/bench_device.py embed --device cuda --texts 20000
The last line of each prints the headline ratio (device vs CPU, bf16 vs fp32).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def bench_knn(args: argparse.Namespace) -> None:
    from atomicrag.graph.synonyms import synonym_edges

    g = torch.Generator().manual_seed(0)
    e = args.entities
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
          f"cpu {m:,} entities in {t_cpu:.2f} s; edges equal on the slice: {equal}")
    print(f"knn_pairs_per_s_device={rate_dev:.3g} cpu={rate_cpu:.3g} ratio={rate_dev / rate_cpu:.1f}")


class MiniLMShaped(torch.nn.Module):
    """Token embedding + 6 post-norm transformer layers (384, 12 heads, 1536 FFN), mean pooled."""

    def __init__(self, vocab: int = 30522, d: int = 384, layers: int = 6, heads: int = 12, ffn: int = 1536):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(512, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        h = self.enc(self.emb(ids) + self.pos(pos), src_key_padding_mask=~mask)  # [b, t, d]
        m = mask.unsqueeze(-1).to(h.dtype)
        return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)  # [b, d]


def load_encoder(dev: torch.device):
    """(name, model(ids, mask) -> [b, d], vocab size): real MiniLM when possible, else random init."""
    try:
        from transformers import AutoModel

        from atomicrag.core.offline_models import offline_minilm_path

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        hf = AutoModel.from_pretrained(offline_minilm_path(), local_files_only=True).to(dev).train(False)

        def run(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            h = hf(input_ids=ids, attention_mask=mask.long()).last_hidden_state.float()
            m = mask.unsqueeze(-1).float()
            return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)
        return "all-MiniLM-L6-v2 (offline weights)", run, hf, int(hf.config.vocab_size)
    except Exception as exc:  # noqa: BLE001 - any missing piece means: use the random encoder
        print(f"MiniLM weights unavailable ({type(exc).__name__}: {exc}); using a random-init MiniLM-shaped encoder")
    torch.manual_seed(0)
    model = MiniLMShaped().to(dev).train(False)
    return "random-init MiniLM-shaped encoder", lambda ids, mask: model(ids, mask).float(), model, 30522


def bench_embed(args: argparse.Namespace) -> None:
    dev = torch.device(args.device)
    name, run, model, vocab = load_encoder(dev)
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(12, args.max_len, (args.texts,), generator=g)  # short atoms, like 2Wiki sentences
    lengths, _ = torch.sort(lengths, descending=True)  # length batching, as the encoders do
    tokens = int(lengths.sum())
    batches = []
    for i in range(0, args.texts, args.batch):
        ln = lengths[i: i + args.batch]
        ids = torch.randint(1000, vocab, (ln.numel(), int(ln[0])), generator=g)
        mask = torch.arange(int(ln[0])).unsqueeze(0) < ln.unsqueeze(1)
        batches.append((ids.to(dev), mask.to(dev)))
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    if dev.type == "cuda":
        dtypes["fp16"] = torch.float16
    out, rates = {}, {}
    for label, dt in dtypes.items():
        model.to(dt)
        with torch.inference_mode():
            run(*batches[-1])  # warm-up
            sync(dev)
            t0 = time.perf_counter()
            out[label] = torch.cat([run(ids, mask).float().cpu() for ids, mask in batches])
            sync(dev)
        rates[label] = tokens / (time.perf_counter() - t0)
        cos = float((out[label] * out["fp32"]).sum(1).min())
        print(f"{name} on {args.device} {label}: {rates[label]:,.0f} tokens/s ({args.texts:,} texts, "
              f"{tokens:,} tokens), min cosine to fp32 {cos:.5f}", flush=True)
    best = max((k for k in rates if k != "fp32"), key=lambda k: rates[k])
    print(f"embed_tokens_per_s_fp32={rates['fp32']:.0f} {best}={rates[best]:.0f} ratio={rates[best] / rates['fp32']:.2f}")


def check_exact(args: argparse.Namespace) -> None:
    """The float64 exact PPR solve (``fidelity.ppr_solve=exact``) on the device against the same
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


def check_clamp(args: argparse.Namespace) -> None:
    """An embedder configured past the model's maximum length (bge-large's 2,048 with a 512-token
    model) encodes a 3,000-word text on the device: the length is clamped, no device-side assert."""
    from atomicrag.core.config import EmbedderConfig
    from atomicrag.embed import build_embedder

    try:
        emb = build_embedder(EmbedderConfig(model="minilm", max_length=2048, device=args.device), None)
    except Exception as exc:  # noqa: BLE001 - a bare machine may lack sentence-transformers or the weights
        print(f"clamp skipped: {type(exc).__name__}: {str(exc)[:200]}")
        return
    vec = emb.encode(["word " * 3000, "a short text"])
    print(f"clamp ok: {tuple(vec.shape)} on {args.device}, finite={bool(torch.isfinite(torch.as_tensor(vec)).all())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    k = sub.add_parser("knn")
    k.add_argument("--entities", type=int, default=1_000_000)
    k.add_argument("--dim", type=int, default=384)
    k.add_argument("--batch", type=int, default=8192)
    k.add_argument("--cpu-slice", type=int, default=20_000)
    k.add_argument("--device", default="cuda")
    e = sub.add_parser("embed")
    e.add_argument("--texts", type=int, default=20_000)
    e.add_argument("--max-len", type=int, default=64)
    e.add_argument("--batch", type=int, default=256)
    e.add_argument("--device", default="cuda")
    x = sub.add_parser("exact")
    x.add_argument("--nodes", type=int, default=200_000)
    x.add_argument("--queries", type=int, default=256)
    x.add_argument("--cpu-slice", type=int, default=16)
    x.add_argument("--device", default="cuda")
    c = sub.add_parser("clamp")
    c.add_argument("--device", default="cuda")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, device {args.device}"
          + (f" ({torch.cuda.get_device_name()})" if args.device.startswith("cuda") else ""), flush=True)
    {"knn": bench_knn, "embed": bench_embed, "exact": check_exact, "clamp": check_clamp}[args.what](args)


if __name__ == "__main__":
    main()
