"""What verifying a saved index's file digests costs on load (library/checksums.py).

    bash scripts/record_output.sh results/benchmarks/checksums_2wiki_YYYYMMDD.txt \\
        .venv/bin/python scripts/bench.py checksums            # the 2Wiki corpus (6,119 passages)
    python scripts/bench.py checksums --corpus my.jsonl --embedder minilm --repeats 5

Builds a library index over a corpus (JSONL with ``text`` and optional ``title``/``id``; default:
the 2WikiMultihopQA corpus of the data folder) with the library's default sentence atomizer, saves
it, then loads it ``--repeats`` times and prints the median of: the whole ``AtomicRAG.load``, the
folder read it runs (``library.io.load_dir``) and the digest check inside it
(``checksums.verify_digests``), with the check's share of each. The default embedder is the fake
hashing one at MiniLM's width (``dim=384``): the files then have the size a MiniLM index has,
without minutes of embedding on a small CPU (``--embedder minilm`` builds the real one). Every
load reads warm files (the page cache holds them after the first), the usual case for an index
that is loaded repeatedly; a cold first read costs the digest nothing extra, since the loader
reads the same bytes. A script, not a timed test.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from atomicrag import AtomicRAG
from atomicrag.data.loaders import split_files
from atomicrag.library import checksums, io


def default_corpus() -> Path:
    return split_files("2wikimultihopqa", "dev")[1]  # where paths.data_dir=auto finds it


def read_corpus(path: Path, limit: int | None) -> list[dict]:
    docs = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            rec = json.loads(line)
            docs.append({"doc_id": str(rec.get("id", i)), "text": rec["text"], "title": rec.get("title") or ""})
            if limit and len(docs) >= limit:
                break
    return docs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=None, help="JSONL corpus (default: 2Wiki's corpus.jsonl)")
    ap.add_argument("--limit", type=int, default=None, help="index only the first N passages")
    ap.add_argument("--embedder", choices=["fake", "minilm"], default="fake")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--index", type=Path, default=None, help="keep the index here (default: a temporary folder)")
    ap.add_argument("--reuse", action="store_true", help="--index already holds the index: measure, build nothing")
    args = ap.parse_args()

    corpus = args.corpus or default_corpus()
    docs = read_corpus(corpus, args.limit)
    embedder = {"option": "fake", "dim": 384} if args.embedder == "fake" else {"option": "minilm"}
    cfg = {"embedder": embedder, "atomizer": {"name": "sentence"}, "llm": {"option": "fake"}, "reader": {"name": "none"}}
    with tempfile.TemporaryDirectory() as tmp:
        path = args.index or Path(tmp) / "index"
        if args.reuse and args.index is not None:
            rag = AtomicRAG.load(path, progress=False, config={"llm": {"option": "fake"}})
            build_s = save_s = float("nan")
        else:
            t0 = time.perf_counter()
            rag = AtomicRAG(cfg, progress=False).index(docs)
            build_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            rag.save(path)
            save_s = time.perf_counter() - t0
        files = json.loads((path / "manifest.json").read_text())["files"]
        total = sum(e["bytes"] for e in files.values())
        print(f"corpus: {corpus}, {len(docs)} passages; embedder {args.embedder} (dim {rag.embedder.dim}); "
              f"{rag.graph.num_atoms} atoms, {rag.graph.num_entities} entities")
        print(f"build {build_s:.1f} s, save {save_s:.2f} s (digests included)")
        print(f"index files: {len(files)}, {total / 2**20:.1f} MiB")
        for name, e in sorted(files.items(), key=lambda kv: -kv[1]["bytes"]):
            print(f"  {name:32s} {e['bytes'] / 2**20:8.2f} MiB")

        load_cfg = {"llm": {"option": "fake"}}
        AtomicRAG.load(path, progress=False, config=load_cfg)  # warm the page cache and the imports
        whole, folder, digest = [], [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            AtomicRAG.load(path, progress=False, config=load_cfg)
            whole.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            io.load_dir(path)
            folder.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            checksums.verify_digests(path, files)
            digest.append(time.perf_counter() - t0)
        w, f, d = (statistics.median(x) for x in (whole, folder, digest))
        print(f"median of {args.repeats} warm loads: AtomicRAG.load {w:.3f} s, load_dir {f:.3f} s, "
              f"verify_digests {d:.3f} s ({total / 2**20 / d:.0f} MiB/s)")
        print(f"digest share: {100 * d / w:.1f}% of AtomicRAG.load, {100 * d / f:.1f}% of load_dir "
              f"(both include the check); load without it would take {w - d:.3f} s: "
              f"ratio with/without {w / (w - d):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
