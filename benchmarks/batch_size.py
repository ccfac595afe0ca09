#!/usr/bin/env python
"""Embedding batch size: texts per second of short texts (entity-like names) and of sentences.

An index embeds two kinds of text: atoms (sentences, tens of tokens) and entity names (a few
tokens each, and more of them). A batch size tuned on sentences can starve the encoder on names:
each batch call has a fixed cost, and a batch of 3-token names is little work. For each embedder
option (``conf/embedder/<name>.yaml``) this embeds the passage titles of ``--corpus`` (the short
texts: 2Wiki titles are entity names) and its first ``--sentences`` sentences at each
``--batch-sizes`` (texts per batch) and each ``--batch-tokens`` (padded tokens per batch,
``embedder.batch_tokens``: short texts then go in larger batches than sentences), all in one
process, and prints texts per second (median of ``--repeats``) and the ratio to the option's own
batching (the baseline, run in the same process).

    python scripts/bench.py batch_size --embedders minilm_onnx minilm --batch-sizes 32 64 128 256 \
        --batch-tokens 1024 2048
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from atomicrag.core.compose import load_config
from atomicrag.data.loaders import split_files
from atomicrag.embed.factory import build_embedder


def texts_of(corpus: Path, n_sentences: int) -> tuple[list[str], list[str]]:
    """(distinct passage titles, the first ``n_sentences`` sentences) of a corpus JSONL."""
    titles: dict[str, None] = {}
    sentences: list[str] = []
    for line in corpus.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("title"):
            titles[row["title"]] = None
        if len(sentences) < n_sentences:
            sentences += [s for s in re.split(r"(?<=[.!?])\s+", row["text"]) if len(s) > 3]
    return list(titles), sentences[:n_sentences]


def rate(embedder, texts: list[str], batching: tuple[int, int], repeats: int) -> float:  # noqa: ANN001
    """Texts per second with ``batching`` = (batch_size, batch_tokens), the median of ``repeats`` timed calls."""
    embedder.batch_size, embedder.batch_tokens = batching
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        embedder.encode(texts)
        runs.append(time.perf_counter() - t0)
    return len(texts) / statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedders", nargs="+", default=["minilm_onnx", "minilm"], help="conf/embedder options")
    ap.add_argument("--batch-sizes", nargs="+", type=int, default=[32, 64, 128, 256])
    ap.add_argument("--batch-tokens", nargs="*", type=int, default=[1024, 2048])
    ap.add_argument("--corpus", type=Path, default=None, help="JSONL with title and text (default: 2Wiki DEV)")
    ap.add_argument("--sentences", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    corpus = args.corpus or split_files("2wikimultihopqa", "dev")[1]
    short, long = texts_of(corpus, args.sentences)
    print(f"{corpus}: {len(short)} titles (short texts), {len(long)} sentences; median of {args.repeats}")
    for option in args.embedders:
        cfg = load_config({"embedder": option}, env_prefix=None)
        embedder = build_embedder(cfg.embedder, cfg.fidelity)
        base = (cfg.embedder.batch_size, cfg.embedder.batch_tokens)
        ways = list(dict.fromkeys([base, *((b, 0) for b in args.batch_sizes),
                                   *((base[0], t) for t in args.batch_tokens)]))

        def label(way: tuple[int, int]) -> str:
            return f"tokens {way[1]:5d}" if way[1] else f"batch  {way[0]:5d}"

        embedder.encode(long[:64])  # warm-up: first-call allocations and kernels outside the timings
        for kind, texts in (("titles", short), ("sentences", long)):
            rates = {w: rate(embedder, texts, w, args.repeats) for w in ways}
            for w in ways:
                mark = " (config)" if w == base else ""
                print(f"{option:12s} {kind:9s} {label(w)}{mark:9s} {rates[w]:8.1f} texts/s  "
                      f"x{rates[w] / rates[base]:.2f} vs {label(base)}", flush=True)


if __name__ == "__main__":
    main()
