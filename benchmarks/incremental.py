#!/usr/bin/env python
"""Incremental update vs full rebuild on the 2Wiki corpus (library API, atomizer=sentence).

Builds an index over the first ``--base`` passages, inserts the next ``--insert`` ones, and
compares the insert's time with indexing all of them from scratch; then deletes ``--delete``
passages and compares with a rebuild over the rest. Both results are checked for equality with
the fresh builds (edge sets, and the top atoms of ``--questions`` dev questions). Prints wall and
CPU seconds (CPU time stays meaningful on a shared machine) and the ratios.

    .venv/bin/python scripts/bench.py incremental                      # fake embedder
    .venv/bin/python scripts/bench.py incremental --embedder minilm    # offline all-MiniLM-L6-v2
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from atomicrag import AtomicRAG
from atomicrag.data.loaders import split_files

if TYPE_CHECKING:
    from typing_extensions import Self

ROOT = Path(__file__).resolve().parents[1]


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
            if limit is not None and len(out) >= limit:
                break
    return out


class Timer:
    def __init__(self, label: str) -> None:
        self.label = label

    def __enter__(self) -> Self:
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.w
        self.cpu = time.process_time() - self.c
        print(f"  {self.label:<42} wall {self.wall:8.2f} s   cpu {self.cpu:8.2f} s", flush=True)


def config(embedder: str, precision: str = "auto") -> dict[str, Any]:
    emb = {"name": "fake", "dim": 384} if embedder == "fake" else {
        "name": "sentence_transformers", "model": "minilm", "device": "cpu", "batch_size": 128,
        "precision": precision}
    return {"embedder": emb, "atomizer": {"name": "sentence"}, "reader": {"name": "none"},
            "llm": {"cache": False}, "retriever": {"top_k": 25}}


def edge_sets(g: Any) -> dict[str, set[tuple[int, int]]]:
    return {k: set(zip(e.src.tolist(), e.dst.tolist())) for k, e in g.edges.items()}


def check_equal(a: AtomicRAG, b: AtomicRAG, questions: list[str]) -> str:
    ga, gb = a.graph, b.graph
    same_nodes = ga.entity_keys == gb.entity_keys and [x.id for x in ga.atoms] == [x.id for x in gb.atoms]
    same_edges = edge_sets(ga) == edge_sets(gb)
    ra, rb = a.query(questions), b.query(questions)
    same_top = all([i.atom_id for i in x.items] == [i.atom_id for i in y.items] for x, y in zip(ra, rb))
    max_diff = max((abs(i.score - j.score) for x, y in zip(ra, rb) for i, j in zip(x.items, y.items)), default=0.0)
    ok = same_nodes and same_edges and same_top and max_diff <= 1e-5
    return (f"{'EQUAL' if ok else 'DIFFERENT'} (nodes {same_nodes}, edges {same_edges}, top atoms of "
            f"{len(questions)} questions {same_top}, max score diff {max_diff:.2e})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, help="passages JSONL (default: the 2Wiki DEV corpus where paths.data_dir=auto finds it)")
    ap.add_argument("--questions-file", type=Path, help="questions JSONL (default: the 2Wiki DEV questions, found alike)")
    ap.add_argument("--base", type=int, default=5119, help="passages in the starting index")
    ap.add_argument("--insert", type=int, default=1000)
    ap.add_argument("--delete", type=int, default=1000)
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--embedder", choices=("fake", "minilm"), default="fake")
    ap.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto",
                    help="embedder.precision of the MiniLM runs (auto: bf16 where the CPU has it)")
    args = ap.parse_args()
    if args.corpus is None or args.questions_file is None:
        qfile, cfile = split_files("2wikimultihopqa", "dev")
        args.corpus, args.questions_file = args.corpus or cfile, args.questions_file or qfile

    docs = read_jsonl(args.corpus, args.base + args.insert)
    if len(docs) < args.base + args.insert:
        raise SystemExit(f"{args.corpus} has {len(docs)} passages; --base + --insert needs {args.base + args.insert}")
    docs = [{"id": d["id"], "title": d.get("title", ""), "text": d["text"]} for d in docs]
    base, new = docs[: args.base], docs[args.base:]
    questions = [q["question"] for q in read_jsonl(args.questions_file, args.questions)]
    cfg = config(args.embedder, args.precision)
    print(f"2Wiki: base {len(base)} passages, insert {len(new)}, delete {args.delete}; embedder {args.embedder}; "
          f"torch threads {__import__('torch').get_num_threads()}")

    warm = AtomicRAG(cfg, progress=False)
    warm.index(base[:20])  # load spaCy and the embedder once, outside the timings
    with Timer(f"index {len(base)} (starting point)"):
        rag = AtomicRAG(cfg, embedder=warm.embedder, progress=False).index(base)
    with Timer(f"insert {len(new)} (incremental)") as t_ins:
        rag.insert(new)
    upd = rag.graph.meta["last_update"]
    timings = rag.graph.meta["timings"]
    with Timer(f"index {len(docs)} (full rebuild)") as t_full:
        full = AtomicRAG(cfg, embedder=warm.embedder, progress=False).index(docs)
    print(f"  insert: {upd['new_atom_texts']} new atom texts, {upd['new_entity_texts']} new entity texts, "
          f"{upd['synonym_rows_computed']} synonym rows computed of {rag.graph.num_entities} entities; "
          f"graph stages {timings}")
    print(f"  insert vs rebuild: wall {t_full.wall / t_ins.wall:.1f}x faster, cpu {t_full.cpu / t_ins.cpu:.1f}x")
    checks = [check_equal(rag, full, questions)]
    print(f"  check: {checks[-1]}")

    gone = [d["id"] for d in docs[:: max(1, len(docs) // args.delete)][: args.delete]]
    with Timer(f"delete {len(gone)} (incremental)") as t_del:
        rag.delete(gone)
    rest = [d for d in docs if d["id"] not in set(gone)]
    with Timer(f"index {len(rest)} (rebuild after delete)") as t_re:
        ref = AtomicRAG(cfg, embedder=warm.embedder, progress=False).index(rest)
    upd = rag.graph.meta["last_update"]
    print(f"  delete: {upd['synonym_rows_computed']} synonym rows recomputed; graph stages "
          f"{rag.graph.meta['timings']}")
    print(f"  delete vs rebuild: wall {t_re.wall / t_del.wall:.1f}x faster, cpu {t_re.cpu / t_del.cpu:.1f}x")
    checks.append(check_equal(rag, ref, questions))
    print(f"  check: {checks[-1]}")
    if any(c.startswith("DIFFERENT") for c in checks):  # an update that differs from a fresh build fails the run
        raise SystemExit("incremental results differ from a fresh build (see the checks above)")


if __name__ == "__main__":
    main()
