#!/usr/bin/env python
"""Indexing cost of one long text file, by size: is it linear? (fake LLM and embedder, so the
figures are the library's own work: reading, token windows, spaCy sentences and NER, graph.)

    python scripts/bench.py long_documents --mb 1 4 16

Prints wall and CPU seconds per size, CPU seconds per MB, and the ratio of each size's per-MB
CPU cost to the smallest one's (1.0 = linear). The text is synthetic: sentences naming a few hundred people and
places, in paragraphs, so entity counts grow as in a long report rather than without bound.
"""
from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NAMES = ["Marie Curie", "Pierre Curie", "Warsaw", "Paris", "Leo Fong", "Vistula", "Sorbonne"] + [
    f"Person{i} Smith" for i in range(400)] + [f"City{i}" for i in range(100)]
VERBS = ["was born in", "moved to", "married", "studied at", "wrote about", "visited", "worked with"]


def make_text(mb: float, seed: int = 0) -> str:
    rnd, parts, n = random.Random(seed), [], 0
    while n < mb * 1_000_000:
        para = " ".join(f"{rnd.choice(NAMES)} {rnd.choice(VERBS)} {rnd.choice(NAMES)} in {rnd.randint(1800, 2000)}."
                        for _ in range(rnd.randint(3, 8))) + "\n\n"
        parts.append(para)
        n += len(para)
    return "".join(parts)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (spaCy's worker processes): on a
    shared machine the wall time says more about the other jobs than about this code."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def index_once(path: Path) -> tuple[float, float, dict]:
    from atomicrag import AtomicRAG

    rag = AtomicRAG({"llm": "fake", "embedder": "fake", "reader": {"name": "none"}}, progress=False)
    t, c = time.perf_counter(), _cpu()
    rag.index(path)
    wall, cpu = time.perf_counter() - t, _cpu() - c
    # counts only: rag.stats() also computes the clustering coefficient, which is not part of
    # indexing (benchmarks/triangles.py times it)
    g = rag._indexed.graph  # noqa: SLF001  (a benchmark reads the built graph's sizes)
    chunks = sum(s.chunks for s in rag._states.values())  # noqa: SLF001
    return wall, cpu, {"chunks": chunks, "atoms": g.num_atoms, "entities": g.num_entities}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[1, 4, 16])
    args = ap.parse_args(argv)
    index_once_warm = None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.txt"  # loads spaCy and the models once, outside the timings
        warm.write_text(make_text(0.01))
        index_once_warm = index_once(warm)[0]  # wall
        for mb in args.mb:
            path = Path(tmp) / f"doc_{mb}mb.txt"
            path.write_text(make_text(mb))
            wall, cpu, st = index_once(path)
            rows.append((mb, cpu, st))
            base = rows[0][1] / rows[0][0]
            print(f"{mb:>6.1f} MB  {wall:8.1f} s wall  {cpu:8.1f} CPU-s  {cpu / mb:6.1f} CPU-s/MB  "
                  f"x{(cpu / mb) / base:4.2f} of the "
                  f"{rows[0][0]:g} MB cost per MB  ({st['chunks']} chunks, {st['atoms']} atoms, "
                  f"{st['entities']} entities)", flush=True)
    print(f"(warm-up {index_once_warm:.1f} s not counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
