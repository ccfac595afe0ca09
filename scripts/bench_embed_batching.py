"""Equal-length batches against padded batches: speed, and whether an embedding depends on its batch.

    python scripts/bench_embed_batching.py                       # MiniLM (sentence-transformers), fp32 and bf16
    python scripts/bench_embed_batching.py --encoders st:bf16 onnx:fp32 --corpus data/2wikimultihopqa/corpus.jsonl

In bf16/fp16 the encoders embed texts in batches of one token length (``embed/encoders.py:
length_batches``): no padding, so a text's embedding should not depend on which texts share its
batch. The baseline, run in the same process on the same texts, is what fp32 still does: texts
sorted by length and cut into padded batches of ``batch_size``. For each encoder it prints

- texts per second of both (median of ``--repeats``) and their ratio;
- batch dependence of both: the largest absolute difference between each text's embedding when
  all texts are embedded in one call and when they are embedded in three interleaved thirds.

The texts are the sentences of ``--corpus`` (JSONL with ``text``; default: the 2Wiki smoke
passages shipped in the package). Exits non-zero when equal-length batches are not batch-invariant
in reduced precision (in fp32 both move a text by ~1e-7, which is reported, not failed).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import torch

import atomicrag.embed.encoders as encoders
import atomicrag.embed.onnx_encoder as onnx_encoder
from atomicrag.core.config import EmbedderConfig
from atomicrag.embed.factory import build_embedder

SMOKE = Path(encoders.__file__).resolve().parents[1] / "datasets" / "2wikimultihopqa" / "smoke" / "corpus.jsonl"


LENGTH_BATCHES = encoders.length_batches


def padded_batches(lengths: list[int], batch_size: int, *, equal: bool = False) -> Iterator[list[int]]:
    """The baseline: sorted by length, cut every ``batch_size`` texts, each batch padded to its longest."""
    return LENGTH_BATCHES(lengths, batch_size, equal=False)


def equal_batches(lengths: list[int], batch_size: int, *, equal: bool = False) -> Iterator[list[int]]:
    """Batches of one token length, whatever the precision."""
    return LENGTH_BATCHES(lengths, batch_size, equal=True)


def sentences(corpus: Path, limit: int) -> list[str]:
    out: list[str] = []
    for line in corpus.read_text().splitlines():
        text = json.loads(line)["text"] if line.strip() else ""
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 3]
        if len(out) >= limit:
            break
    return out[:limit]


def embed(embedder, texts: list[str], batching) -> torch.Tensor:  # noqa: ANN001 (any encoder)
    encoders.length_batches = onnx_encoder.length_batches = batching
    return embedder.encode(texts)


def batch_dependence(embedder, texts: list[str], batching) -> float:  # noqa: ANN001
    whole = embed(embedder, texts, batching)
    parts = torch.empty_like(whole)
    for k in range(3):  # interleaved thirds: every batch has other neighbours than in the whole
        idx = list(range(k, len(texts), 3))
        parts[idx] = embed(embedder, [texts[i] for i in idx], batching)
    return float((whole - parts).abs().max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encoders", nargs="+", default=["st:fp32", "st:bf16"],
                    help="name:precision pairs; name is st (sentence-transformers), hf (transformers) or onnx")
    ap.add_argument("--corpus", type=Path, default=SMOKE)
    ap.add_argument("--limit", type=int, default=2000, help="sentences to embed")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    texts = sentences(args.corpus, args.limit)
    print(f"{len(texts)} sentences of {args.corpus.name}; batch size {args.batch_size}; "
          f"torch threads {torch.get_num_threads()}")
    names = {"st": "sentence_transformers", "hf": "transformers", "onnx": "onnx"}
    failed = []
    try:
        for spec in args.encoders:
            name, precision = spec.split(":")
            emb = build_embedder(EmbedderConfig(name=names[name], model="minilm", device="cpu", precision=precision,
                                                batch_size=args.batch_size))
            embed(emb, texts[:64], equal_batches)  # warm-up: first-call allocations outside the timings
            speed = {}
            for label, batching in (("padded", padded_batches), ("equal-length", equal_batches)):
                times = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    embed(emb, texts, batching)
                    times.append(time.perf_counter() - t0)
                speed[label] = len(texts) / statistics.median(times)
            dep = {label: batch_dependence(emb, texts, b)
                   for label, b in (("padded", padded_batches), ("equal-length", equal_batches))}
            print(f"{spec:10s} padded {speed['padded']:8.1f} texts/s   equal-length {speed['equal-length']:8.1f} texts/s"
                  f"   ratio x{speed['equal-length'] / speed['padded']:.2f}   batch dependence: padded "
                  f"{dep['padded']:.2e}, equal-length {dep['equal-length']:.2e}")
            if dep["equal-length"] != 0.0 and precision != "fp32":
                failed.append(spec)
    finally:  # the encoders' own batching rule again, whatever happened
        encoders.length_batches = onnx_encoder.length_batches = LENGTH_BATCHES
    if failed:
        raise SystemExit(f"equal-length batches are not batch-invariant for {failed}")


if __name__ == "__main__":
    main()
