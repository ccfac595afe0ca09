"""Benchmark: titles read from plain-text files (``dataset.text_titles``) vs none.

The 2Wiki passages are written to a folder as ``<id>.txt`` files whose first line is the
passage's title and whose body is its text, so no file carries a title in metadata. The folder
is indexed by the library three ways and every question is asked (retrieval only):

- ``txt_titles``: the default, ``dataset.text_titles=true`` (the first line becomes the title);
- ``txt_no_titles``: ``dataset.text_titles=false`` (the old behaviour: the line stays text);
- ``jsonl_titles``: the same passages as ``.jsonl`` with a ``title`` field (the reference).

Recall@k is on the result's ranked ``documents`` (file ids = passage ids) against the
questions' ``supporting_ids``. Prints a table and writes a JSON record (``--out``).

    .venv/bin/python scripts/bench.py text_titles --embedder minilm \\
        --out results/benchmarks/text_titles_2wiki_smoke_minilm.json
    .venv/bin/python scripts/bench.py text_titles --embedder fake \\
        --out results/benchmarks/text_titles_2wiki_smoke_fake.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from atomicrag.core.compose import load_config
from atomicrag.data.loaders import split_files
from atomicrag.evaluate.metrics import recall_at_k
from atomicrag.harness.provenance import Provenance
from atomicrag.library.api import AtomicRAG


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_folders(passages: list[dict], root: Path) -> tuple[Path, Path]:
    txt, jsonl = root / "txt", root / "jsonl"
    txt.mkdir()
    jsonl.mkdir()
    for p in passages:
        (txt / f"{p['id']}.txt").write_text(f"{p['title']}\n\n{p['text']}\n", encoding="utf-8")
    (jsonl / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": p["id"], "title": p["title"], "text": p["text"]}) + "\n" for p in passages),
        encoding="utf-8")
    return txt, jsonl


def settings(embedder: str, text_titles: bool = True) -> dict:
    return {"embedder": embedder, "reader": "none", "llm": "fake", "dataset": {"text_titles": text_titles}}


def run(source: Path, questions: list[dict], embedder: str, text_titles: bool, ks: tuple[int, ...]) -> dict:
    cfg = settings(embedder, text_titles)
    t0 = time.perf_counter()
    with AtomicRAG(cfg, progress=False) as rag:
        rag.index([source])
        t_index = time.perf_counter() - t0
        titled = sum(1 for d in rag.documents if d.title)
        results = rag.search([q["question"] for q in questions])
    recall = {k: [recall_at_k(r.documents, q["supporting_ids"], k) for r, q in zip(results, questions)] for k in ks}
    return {"documents": len(rag.documents), "titled_documents": titled, "index_s": round(t_index, 1),
            **{f"recall@{k}": round(100 * sum(v for v in vals if v is not None)
                                    / sum(v is not None for v in vals), 1) for k, vals in recall.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="minilm", help="embedder group option (minilm, fake, ...)")
    ap.add_argument("--split", default="smoke", choices=["smoke", "dev"],
                    help="smoke: 130 passages, 20 questions; dev: 6,119 passages, 667 questions (slow on CPU)")
    ap.add_argument("--data-dir", default="auto",
                    help="paths.data_dir holding 2wikimultihopqa/ (auto: ./data, ../shared/data, the shipped smoke set)")
    ap.add_argument("--out", type=Path, help="JSON record to write")
    args = ap.parse_args()
    prov = Provenance.start()
    qfile, cfile = split_files("2wikimultihopqa", args.split, args.data_dir)
    passages, questions = _jsonl(cfile), _jsonl(qfile)
    ks = (2, 5)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        txt, jsonl = write_folders(passages, Path(tmp))
        rows["txt_titles"] = run(txt, questions, args.embedder, True, ks)
        rows["txt_no_titles"] = run(txt, questions, args.embedder, False, ks)
        rows["jsonl_titles"] = run(jsonl, questions, args.embedder, True, ks)
    print(f"2Wiki {args.split}: {len(passages)} passages, {len(questions)} questions, embedder={args.embedder}")
    print(f"{'variant':<15} {'titled':>7} " + " ".join(f"{f'R@{k}':>6}" for k in ks) + f" {'index s':>8}")
    for name, r in rows.items():
        print(f"{name:<15} {r['titled_documents']:>7} " + " ".join(f"{r[f'recall@{k}']:>6.1f}" for k in ks)
              + f" {r['index_s']:>8.1f}")
    if args.out:
        record = {"benchmark": "text_titles", "split": args.split, "embedder": args.embedder,
                  "passages": len(passages), "questions": len(questions), "rows": rows,
                  "provenance": prov.finish(load_config(settings(args.embedder)),
                                            data_files=[cfile, qfile])}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp_out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp_out, args.out)  # atomic: a reader never sees half a record
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
