#!/usr/bin/env python
"""Grid search of the PPR seeding on one half of 2Wiki DEV, measured on the other half.

The paper's seeding values (entity cosine >= 0.3, alpha = 0.1, restart 0.3) assume bge-large;
this script is how ``conf/retriever/ppr_minilm.yaml`` was chosen for the offline MiniLM. It loads
(or builds) the cached sentence-atom graph once and runs the batched BatchRetriever per grid point
(a few seconds each), printing passage Recall@2/@5. Tune on ``--half 0``, report on ``--half 1``.

    .venv/bin/python scripts/tune_seeding.py --half 0            # the grid
    .venv/bin/python scripts/tune_seeding.py --half 1 --only-best  # dense, paper ppr, the chosen point
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATOMICRAG_NO_PROGRESS", "1")

from atomicrag.core.compose import load_config
from atomicrag.core.config import Config
from atomicrag.data.loaders import load_dataset
from atomicrag.data.token_windows import chunk_passages
from atomicrag.embed.factory import build_embedder
from atomicrag.evaluate.metrics import recall_at_k
from atomicrag.graph.cached_build import index_corpus
from atomicrag.retrieve.query_batch import BatchRetriever

BEST = {"entity_sim_threshold": 0.9, "atom_seed_weight": 0.5, "damping": 0.7}


def with_retriever(base: Config, **fields: object) -> Config:
    d = dataclasses.asdict(base)
    d["retriever"].update(fields)
    return load_config(d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", type=int, choices=[0, 1], default=0, help="DEV questions [half::2]")
    ap.add_argument("--only-best", action="store_true")
    ap.add_argument("--cache-dir", default="cache")
    args = ap.parse_args()
    base = load_config({
        "dataset": {"name": "2wikimultihopqa", "split": "dev", "format": "normalized", "reader": "precise"},
        "embedder": {"name": "onnx", "model": "minilm", "batch_size": 32}, "atomizer": {"name": "sentence"},
        "reader": {"name": "none"}, "retriever": {"option": "ppr"},  # the paper's seeding
    })
    data = load_dataset(base.dataset, base.paths.resolved_data_dir(dataset=base.dataset))
    questions = data.questions[args.half::2]
    embedder = build_embedder(base.embedder, base.fidelity)
    graph = index_corpus(chunk_passages(data.passages, base.dataset), base, None, embedder, args.cache_dir,
                         data.name, progress=False)
    print(f"{len(questions)} questions (half {args.half}), graph of {graph.num_nodes:,} nodes", flush=True)
    grid: list[dict[str, object]] = [{"name": "dense"}, {}]  # dense atoms; the paper's ppr values
    if args.only_best:
        grid.append(BEST)
    else:
        grid += [{"entity_sim_threshold": t, "atom_seed_weight": a, "damping": r}
                 for t, a, r in itertools.product((0.6, 0.7, 0.8, 0.9), (0.5, 1.0, 2.0), (0.3, 0.7))]
    for point in grid:
        engine = BatchRetriever(with_retriever(base, **point), graph, embedder)
        t0 = time.perf_counter()
        traces = engine.run(questions).traces
        r2 = sum(recall_at_k(t.retrieved_passages, q.supporting_ids, 2) or 0 for q, t in zip(questions, traces))
        r5 = sum(recall_at_k(t.retrieved_passages, q.supporting_ids, 5) or 0 for q, t in zip(questions, traces))
        n = len(questions)
        print(f"{json.dumps(point):80s} R@2 {100 * r2 / n:5.1f}  R@5 {100 * r5 / n:5.1f}  "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
