"""Equal-length batches against padded batches: speed, and whether an embedding depends on its batch.

    python scripts/bench.py embed_batching                       # MiniLM (sentence-transformers), fp32 and bf16
    python scripts/bench.py embed_batching --encoders st:bf16 onnx:fp32 --corpus data/2wikimultihopqa/corpus.jsonl

In bf16/fp16 the encoders embed texts in batches of one token length (``embed/encoders.py:
length_batches``), each filled to one row count per length (``fixed_rows``): no padding and one
shape per length, so a text's embedding should not depend on which texts share its batch. The
baseline, run in the same process on the same texts, is what fp32 still does: texts
sorted by length and cut into padded batches of ``batch_size``. For each encoder it prints

- texts per second of each rule (median of ``--repeats``) and its ratio to the padded baseline;
- batch dependence of each: the largest absolute difference between each text's embedding when
  all texts are embedded in one call and when they are embedded in three interleaved thirds.

The texts are the sentences of ``--corpus`` (JSONL with ``text``; default: the 2Wiki smoke
passages shipped in the package). Exits non-zero when fixed-shape batches are not batch-invariant
in reduced precision (in fp32 both move a text by ~1e-7, which is reported, not failed).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

import torch

from atomicrag.core.compose import load_config
from atomicrag.data.loaders import split_files
from atomicrag.embed import encoders
from atomicrag.embed.factory import build_embedder


def sentences(corpus: Path, limit: int) -> list[str]:
    out: list[str] = []
    for line in corpus.read_text().splitlines():
        text = json.loads(line)["text"] if line.strip() else ""
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 3]
        if len(out) >= limit:
            break
    return out[:limit]


RULES = {  # label -> (equal-length batches, one row count per length)
    "padded": (False, False), "equal-length": (True, False), "fixed-shape": (True, True)}


def embed(embedder, texts: list[str], rule: str) -> torch.Tensor:  # noqa: ANN001 (any encoder)
    """``texts`` embedded under a batching rule of ``RULES``: padded to each batch's longest, in
    batches of one token length, or in those batches filled to one row count per length."""
    embedder.equal_length_batches, embedder.fixed_shape_batches = RULES[rule]
    return embedder.encode(texts)


def batch_dependence(embedder, texts: list[str], rule: str) -> float:  # noqa: ANN001
    whole = embed(embedder, texts, rule)
    parts = torch.empty_like(whole)
    for k in range(3):  # interleaved thirds: every batch has other neighbours than in the whole
        idx = list(range(k, len(texts), 3))
        parts[idx] = embed(embedder, [texts[i] for i in idx], rule)
    return float((whole - parts).abs().max())


def timed(embedder, texts: list[str], rule: str, repeats: int) -> float:  # noqa: ANN001 (any encoder)
    """Texts per second of ``rule`` (median of ``repeats`` runs, after one untimed run: shapes seen
    first are slower on oneDNN)."""
    embed(embedder, texts, rule)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        embed(embedder, texts, rule)
        times.append(time.perf_counter() - t0)
    return len(texts) / statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encoders", nargs="+", default=["st:fp32", "st:bf16"],
                    help="name:precision pairs; name is st (sentence-transformers), hf (transformers) or onnx")
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--limit", type=int, default=2000, help="sentences to embed")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fixed-rows", type=int, nargs="*", default=[],
                    help="also time fixed-shape batches at each of these row counts (encoders.FIXED_ROWS) "
                         "against padded batches, to choose it")
    args = ap.parse_args()
    args.corpus = args.corpus or split_files("2wikimultihopqa", "smoke")[1]
    texts = sentences(args.corpus, args.limit)
    print(f"{len(texts)} sentences of {args.corpus.name}; batch size {args.batch_size}; "
          f"torch threads {torch.get_num_threads()}")
    names = {"st": "sentence_transformers", "hf": "transformers", "onnx": "onnx"}
    failed = []
    for spec in args.encoders:
        name, precision = spec.split(":")
        cfg = load_config({"embedder": {"name": names[name], "model": "minilm", "device": "cpu",
                                        "precision": precision, "batch_size": args.batch_size}})
        emb = build_embedder(cfg.embedder)
        embed(emb, texts[:64], "fixed-shape")  # warm-up: first-call allocations outside the timings
        speed = {rule: timed(emb, texts, rule, args.repeats) for rule in RULES}
        dep = {rule: batch_dependence(emb, texts, rule) for rule in RULES}
        print(f"{spec:10s} " + "   ".join(f"{r} {speed[r]:8.1f} texts/s (x{speed[r] / speed['padded']:.2f})"
                                          for r in RULES)
              + "   batch dependence: " + ", ".join(f"{r} {dep[r]:.2e}" for r in RULES))
        if dep["fixed-shape"] != 0.0 and precision != "fp32":
            failed.append(spec)
        chosen = encoders.FIXED_ROWS
        for rows in args.fixed_rows:  # the row count: filler rows (few per call) vs calls (few rows each)
            encoders.FIXED_ROWS = rows
            fixed = timed(emb, texts, "fixed-shape", args.repeats)
            print(f"{spec:10s} fixed-shape at {rows:3d} rows{' (FIXED_ROWS)' if rows == chosen else ''}: "
                  f"{fixed:8.1f} texts/s (x{fixed / speed['padded']:.2f} padded)")
        encoders.FIXED_ROWS = chosen
    if failed:
        raise SystemExit(f"fixed-shape batches are not batch-invariant for {failed}")


if __name__ == "__main__":
    main()
