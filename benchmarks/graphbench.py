#!/usr/bin/env python
"""Evidence coverage on Graph-Bench Medical and Novel DEV, raw documents.

The user's setting: each raw document (``corpus_raw.jsonl``: Medical is one document, Novel 20
novels) dropped in as a file, with no title (a file name is not a title, ``data/ingest.py``),
chunked into 256-token windows, sentence atoms, MiniLM; one index per novel (each question is
routed to its novel). Every system returns a context in rank order; evidence coverage
(``evaluate/coverage.py``) reads its first 300 and 600 words. Systems:

- graph retrievers with the reader's context by token budget (``reader.context=documents``,
  ``retrieve/reader_context.py``): ``hybrid`` (the library default), ``ppr_minilm``, dense atoms
  (``retriever=dense``), the paper's ``ppr``; and ``hybrid`` with the paper's atom-list context
  (``reader.context=atoms``, 25 atoms, what the library returned before the documents context);
- window baselines: BM25 and dense MiniLM over 200-word windows of the same documents.

Odd half of DEV (``--half odd``, never tuned on) by default; 95% bootstrap intervals over questions
and per question type. ``--json`` writes the rows.

    python scripts/bench.py graphbench --dataset graphbench_medical --json results/graphbench/medical_half1.json
    python scripts/bench.py graphbench --dataset graphbench_novel --json results/graphbench/novel_half1.json
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATOMICRAG_NO_PROGRESS", "1")

import torch
from qa_stats import HALF_CHOICES, bootstrap, half_name, select_half, write_record

from atomicrag.harness.provenance import Provenance

ROOT = Path(__file__).resolve().parents[1]
WORDS = (300, 600)


def retriever_rows() -> list[tuple[str, dict[str, Any], str]]:
    """(label, retriever option (and fields), reader context)."""
    hybrid, ppr_minilm = {"option": "hybrid"}, {"option": "ppr_minilm"}
    return [("hybrid", hybrid, "documents"), ("ppr_minilm", ppr_minilm, "documents"),
            ("dense atoms", {"option": "dense"}, "documents"), ("ppr (paper values)", {"option": "ppr"}, "documents"),
            ("hybrid, atom-list context (25 atoms)", hybrid, "atoms")]


READER: dict[str, Any] = {}  # --reader: extra reader fields (e.g. {"atoms_first": false})


SETUP: dict[str, Any] = {"embedder": {"name": "onnx", "model": "minilm", "batch_size": 32}, "paths": {},
                         "set": []}  # --set: Hydra overrides applied to every system's config


def config(dataset: str, retriever: dict[str, Any], context: str, context_tokens: int) -> Any:
    from atomicrag.core.compose import load_config

    return load_config(overrides=SETUP["set"], source={
        "dataset": {"name": dataset, "split": "dev", "format": "normalized", "reader": "abstract"},
        "embedder": SETUP["embedder"],
        "paths": SETUP["paths"],
        "atomizer": {"name": "sentence"},
        "retriever": retriever,
        "reader": {"name": "none", "context": context, "context_tokens": context_tokens, **READER},
        "fidelity": {"preset": "custom"},
    })


def windows(passages: list[Any], size: int = 200) -> dict[str, list[str]]:
    """Non-overlapping ``size``-word windows of each corpus's documents."""
    out: dict[str, list[str]] = defaultdict(list)
    for p in passages:
        words = p.text.split()
        out[p.corpus].extend(" ".join(words[i:i + size]) for i in range(0, len(words), size))
    return out


def summarize(label: str, questions: list[Any], contexts: list[list[str]]) -> dict[str, Any]:
    from atomicrag.evaluate.coverage import evidence_coverage

    row: dict[str, Any] = {"system": label}
    for n in WORDS:
        vals = [evidence_coverage(q.evidence, c, n) for q, c in zip(questions, contexts)]
        pairs = [(q, v) for q, v in zip(questions, vals) if v is not None]
        all_v = [v for _, v in pairs]
        row[f"cov@{n}"] = round(100 * sum(all_v) / len(all_v), 1)
        row[f"cov@{n}_ci95"] = bootstrap(all_v)
        row["n"] = len(all_v)
        by_type: dict[str, list[float]] = defaultdict(list)
        for q, v in pairs:
            by_type[q.question_type].append(v)
        row[f"cov@{n}_by_type"] = {t: [round(100 * sum(v) / len(v), 1), len(v)] for t, v in sorted(by_type.items())}
        row[f"_values@{n}"] = vals  # per question (None: no evidence), for the paired differences
    row["words_mean"] = round(sum(sum(len(t.split()) for t in c) for c in contexts) / len(contexts), 1)
    return row


def paired_differences(rows: list[dict[str, Any]], baseline: str) -> None:
    """Each row's coverage minus ``baseline``'s on the same questions, with a paired 95% bootstrap
    interval (``vs_baseline@N``: [difference, [low, high]]); the per-question values stay in the
    record (``per_question@N``, None: a question without evidence) so its summary re-derives."""
    base = next((r for r in rows if r["system"] == baseline), None)
    base_vals = {n: base[f"_values@{n}"] for n in WORDS} if base is not None else {}
    for r in rows:
        for n in WORDS:
            vals = r.pop(f"_values@{n}")
            r[f"per_question@{n}"] = vals
            if base is None or r is base:
                continue
            diff = [a - b for a, b in zip(vals, base_vals[n]) if a is not None and b is not None]
            r[f"vs_baseline@{n}"] = [round(100 * sum(diff) / len(diff), 1), bootstrap(diff)]
            r["baseline"] = baseline


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True, choices=["graphbench_medical", "graphbench_novel"])
    ap.add_argument("--half", default="odd", choices=HALF_CHOICES, help="DEV questions: odd (1), even (0) or all")
    ap.add_argument("--context-tokens", type=int, default=1000, help="budget of the documents context")
    ap.add_argument("--only", default="", help="comma list of system labels (prefix match)")
    ap.add_argument("--corpora", type=int, default=0,
                    help="only the first N corpora in sorted order (Novel: N novels) and their questions; 0 = all")
    ap.add_argument("--cache-dir", default="cache")
    ap.add_argument("--reader", default="{}", help="JSON reader fields for the documents context")
    ap.add_argument("--embedder", default="minilm", help="minilm (ONNX, the default) or conf/embedder/<name>.yaml")
    ap.add_argument("--data-dir", default="auto", help="paths.data_dir (auto: ./data, ../shared/data, then the shipped smoke sets)")
    ap.add_argument("--set", action="append", default=[], metavar="OVERRIDE",
                    help="a Hydra override applied to every system, e.g. --set reader.atoms_first=false (repeatable)")
    ap.add_argument("--json")
    args = ap.parse_args()
    prov = Provenance.start()
    SETUP["set"] = list(args.set)
    READER.update(json.loads(args.reader))
    if args.embedder != "minilm":
        SETUP["embedder"] = args.embedder  # a conf/embedder option
    SETUP["paths"] = {"data_dir": args.data_dir}
    from atomicrag.core.schemas import Question
    from atomicrag.data.loaders import load_dataset, read_raw_documents
    from atomicrag.data.token_windows import chunk_passages
    from atomicrag.engine import ConfigModels, Engine
    from atomicrag.retrieve.lexical import BM25Matrix

    base = config(args.dataset, {}, "documents", args.context_tokens)
    data_dir = base.paths.resolved_data_dir(dataset=base.dataset)
    data = load_dataset(base.dataset, data_dir)
    questions: list[Question] = select_half(data.questions, args.half)
    if args.corpora:  # a run that must fit a time budget: whole corpora with all their questions
        keep = sorted({q.corpus for q in questions if q.corpus})[: args.corpora]
        questions = [q for q in questions if q.corpus in keep]
        print(f"corpora {keep}: {len(questions)} questions", flush=True)
    passages = read_raw_documents(data_dir / args.dataset)  # untitled, as index(folder) reads a .txt file
    models = ConfigModels(base)  # one embedder for the index, every retriever row and the window baselines
    embedder = models.embedder
    t0 = time.perf_counter()
    # one graph per corpus, only the corpora the questions ask about, through the stage cache
    engine = Engine(base, models, cache_dir=args.cache_dir, dataset_name=f"{args.dataset}_raw")
    index = engine.index_passages(passages, chunks=chunk_passages(passages, base.dataset), questions=questions)
    for name, g in index.graphs.items():
        print(f"indexed {name}: {len(index.chunks[name])} chunks, {len(g.graph.atoms):,} atoms "
              f"({time.perf_counter() - t0:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
    rows = []
    wanted = [s for s in args.only.split(",") if s]
    for label, fields, context in retriever_rows():
        if wanted and not any(label.startswith(w) for w in wanted):
            continue
        cfg = config(args.dataset, fields, context, args.context_tokens)
        t1 = time.perf_counter()
        batch = Engine(cfg, models).retrieve(index, questions)  # the same graphs, this row's retriever
        ctx = [[it.text for it in c] for c in batch.contexts]
        rows.append(summarize(label, questions, ctx) | {"s": round(time.perf_counter() - t1, 1)}
                    | {"retriever": fields, "reader_context": context})
        print(json.dumps({k: v for k, v in rows[-1].items() if not k.startswith("_")}), flush=True)
    wins = windows(passages)
    asked = index.route(questions)
    for label in ("BM25 200-word windows", "dense MiniLM 200-word windows"):
        if wanted and not any(label.startswith(w) for w in wanted):
            continue
        ctx = [[] for _ in questions]
        for name, pos in asked.items():
            texts = wins[name if name in wins else passages[0].corpus]
            qs = [questions[i].question for i in pos]
            if label.startswith("BM25"):
                scores = BM25Matrix(texts).scores(qs)  # [q, W]
            else:
                scores = embedder.encode(qs, is_query=True) @ embedder.encode(texts).T  # [q, d] @ [d, W] -> [q, W]
            top = scores.topk(min(6, len(texts)), dim=1).indices  # 6 windows = 1,200 words, past 600
            for row, i in enumerate(pos):
                ctx[i] = [texts[int(j)] for j in top[row]]
        rows.append(summarize(label, questions, ctx))
        print(json.dumps({k: v for k, v in rows[-1].items() if not k.startswith("_")}), flush=True)
    paired_differences(rows, "BM25 200-word windows")
    print(f"\n{args.dataset} DEV {half_name(args.half)} half: evidence coverage, 95% bootstrap CI")
    for r in rows:
        vs = (f"  vs BM25 windows @300 {r['vs_baseline@300'][0]:+.1f} {r['vs_baseline@300'][1]} "
              f"@600 {r['vs_baseline@600'][0]:+.1f} {r['vs_baseline@600'][1]}" if "vs_baseline@300" in r else "")
        print(f"{r['system']:40s} n={r['n']}  @300 {r['cov@300']:5.1f} {r['cov@300_ci95']}  "
              f"@600 {r['cov@600']:5.1f} {r['cov@600_ci95']}  words {r['words_mean']}{vs}")
    if args.json:
        raw = data_dir / args.dataset / "corpus_raw.jsonl"
        write_record(args.json, {"dataset": args.dataset, "half": half_name(args.half),
                                 "context_tokens": args.context_tokens, "rows": rows,
                                 "question_ids": [q.id for q in questions],
                                 "indexes": index.stats(index.route(questions)),  # per corpus: chunks, atoms, merges
                                 "load_1min": os.getloadavg()[0]},
                     prov.finish(base, data_files=[*data.files, raw], uses_llm=False,
                                 extra={"questions": len(questions), "corpora": sorted(index.graphs)}))


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    main()
