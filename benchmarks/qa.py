#!/usr/bin/env python
"""QA benchmark: do retrieval gains reach the answers?

2Wiki DEV odd half (``--half odd``, the default: the questions no retrieval setting was tuned on;
n = 333; ``--half even`` for a follow-up pilot on the tuning half), full corpus
(6,119 passages), one reader for every system: the ``precise`` reader, its prompt, and the same
context budget (``--context-tokens`` regex tokens), on Qwen2.5-Coder-0.5B-Instruct served by the
CPU vLLM server. Systems:

- ``atomicrag``: the default retriever (``retriever=hybrid``) and the default reader context
  (ranked documents filled to the budget, ``retrieve/reader_context.py``, sized to the reader:
  the LLM option's ``llm.reader_documents``, 2 for the ~0.1-0.5B models);
- ``atomicrag_budget``: the same, not sized to the reader (every ranked document the budget
  holds; ``llm.reader_documents=0``; the default before the sizing rule; optional row);
- ``atomicrag_atoms``: the same retrieval, the paper's atom-list context (``reader.context=atoms``,
  ``--atoms-context`` atoms; optional row);
- ``atomicrag_top5``: the default's documents context from its first 5 documents only (vanilla's
  count; ``reader.max_documents=5``; optional row);
- ``vanilla``: dense MiniLM over the passages, top-5 passages (cut to the same budget);
- ``gold``: the gold supporting passages (the reader's ceiling).

Questions go in blocks: every system answers a block before the next starts, and each answer
is appended to ``<out>/answers.jsonl`` at once, so a run stopped early still gives paired rows.
The summary (EM/F1 with 95% bootstrap intervals, paired F1 differences to vanilla and, when the
gold row ran, to the gold passages) is printed and written
to ``<out>/summary.json`` from whatever rows are there; ``--summary-only`` re-reads them.

    python scripts/bench.py qa --n 333 --out results/qa_2wiki/odd333
    python scripts/bench.py qa --summary-only --out results/qa_2wiki/odd333
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATOMICRAG_NO_PROGRESS", "1")

from qa_stats import HALF_CHOICES, half_name, select_half
from qa_stats import bootstrap as _bootstrap

from atomicrag.core.artifacts import write_json_atomic
from atomicrag.harness.provenance import Provenance, git_state

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("atomicrag", "vanilla", "gold", "atomicrag_atoms", "atomicrag_top5", "atomicrag_budget")


# each system is the base config plus Hydra overrides (the one composer, core/compose.py); its
# contexts come from Engine.retrieve over the one index (gold reads the gold passages, no retriever)
SYSTEM_OVERRIDES: dict[str, list[str]] = {
    "atomicrag": [],
    "atomicrag_atoms": ["reader.context=atoms"],
    "atomicrag_top5": ["reader.max_documents=5"],
    "atomicrag_budget": ["llm.reader_documents=0"],
    "vanilla": ["retriever=dense_passage", "retriever.passage_top_k=5"],
}


def base_config(args: argparse.Namespace, overrides: list[str] | tuple[str, ...] = ()) -> Any:
    from atomicrag.core.compose import load_config

    return load_config(overrides=[*args.set, *overrides], source={
        "dataset": {"name": "2wikimultihopqa", "split": args.split, "format": "normalized", "reader": "precise"},
        # the same embedder settings as benchmarks/tune_retrieval.py: its cached index is reused
        "embedder": args.embedder if args.embedder != "minilm" else {"name": "onnx", "model": "minilm", "batch_size": 32},
        "paths": {"data_dir": args.data_dir},
        "atomizer": {"name": "sentence", "merge_window_repeats": bool(args.merge_window_repeats)},
        "retriever": "hybrid",
        "reader": {"name": "precise", "max_tokens": args.max_tokens, "context": "documents",
                   "context_tokens": args.context_tokens, "answer_followup": args.answer_followup},
        "sieve": {"name": "none", "max_context": args.atoms_context},
        "llm": {"option": args.llm, "concurrency": args.concurrency,
                **({"n_threads": args.llm_threads} if args.llm_threads else {})},
        "fidelity": {"preset": "custom"},
    })


def gold_context(q: Any, passages: dict[str, Any]) -> list[Any]:
    from atomicrag.retrieve.merge import ContextItem

    return [ContextItem(text=passages[p].text, score=1.0, passage_id=p, title=passages[p].title, passage_ids=[p])
            for p in q.supporting_ids if p in passages]


def passage_contexts(args: argparse.Namespace, cfg: Any, data: Any, questions: list[Any], models: Any
                     ) -> tuple[dict[str, list[list[Any]]], dict[str, list[list[str]]]]:
    """Contexts (and passage rankings) of the systems that need no atom index: vanilla, gold."""
    from atomicrag.engine import Engine
    from atomicrag.retrieve.reader_context import fit_budget

    passages = data.passage_index()
    vcfg = base_config(args, SYSTEM_OVERRIDES["vanilla"])
    batch = Engine(vcfg, models).retrieve(Engine(vcfg, models).index_passages(data.passages), questions)
    ctx = {"vanilla": [fit_budget(c, args.context_tokens) for c in batch.contexts],
           "gold": [fit_budget(gold_context(q, passages), args.context_tokens) for q in questions]}
    return ctx, {"vanilla": [t.retrieved_passages for t in batch.traces]}


def atomic_contexts(args: argparse.Namespace, cfg: Any, data: Any, questions: list[Any], models: Any
                    ) -> tuple[dict[str, list[list[Any]]], dict[str, list[list[str]]]]:
    """AtomicRAG's contexts on the cached 2Wiki index (built here when the cache has none): one
    index, each system's retrieval through ``Engine.retrieve`` with its overrides."""
    from atomicrag.engine import Engine
    from atomicrag.retrieve.reader_context import fit_budget

    index = Engine(cfg, models, cache_dir=args.cache_dir, dataset_name=data.name).index_passages(data.passages)
    out: dict[str, list[list[Any]]] = {}
    ranked: dict[str, list[list[str]]] = {}
    for system in (s for s in args.systems if s.startswith("atomicrag")):
        batch = Engine(base_config(args, SYSTEM_OVERRIDES[system]), models).retrieve(index, questions)
        # the atom list is by count (--atoms-context); every system has the same token budget
        out[system] = ([fit_budget(c, args.context_tokens) for c in batch.contexts] if system == "atomicrag_atoms"
                       else batch.contexts)
        ranked[system] = [t.retrieved_passages for t in batch.traces]
    return out, ranked


def bootstrap(values: list[float]) -> list[float]:
    return _bootstrap(values, reps=2000)  # the committed QA records use 2,000 resamples


def summarize(rows: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    """Per system EM/F1 (failures score 0 and are counted), paired F1 differences vs vanilla."""
    by_q: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_q.setdefault(r["id"], {})[r["system"]] = r
    done = [q for q, s in by_q.items() if all(x in s for x in systems)]  # paired: every system answered
    out: dict[str, Any] = {"n": len(done), "systems": {}}
    for s in systems:
        em = [by_q[q][s]["em"] for q in done]
        f1 = [by_q[q][s]["f1"] for q in done]
        cont = [by_q[q][s]["gold_in_reply"] for q in done]
        if not done:
            continue
        out["systems"][s] = {
            "EM": round(100 * sum(em) / len(em), 1), "EM_ci95": bootstrap(em),
            "F1": round(100 * sum(f1) / len(f1), 1), "F1_ci95": bootstrap(f1),
            "gold_in_reply": round(100 * sum(cont) / len(cont), 1),
            "failed": sum(by_q[q][s]["failed"] for q in done),
            "no_answer_marker": sum(not by_q[q][s]["marker_found"] for q in done),
            "answer_followups": sum(bool(by_q[q][s].get("followup")) for q in done),
            "context_tokens_mean": round(sum(by_q[q][s]["context_tokens"] for q in done) / len(done), 1),
            "R@5": (round(100 * sum(by_q[q][s]["R@5"] for q in done) / len(done), 1)
                    if all(by_q[q][s].get("R@5") is not None for q in done) else None),
        }
    for s in systems:
        if s == "vanilla" or "vanilla" not in systems or not done:
            continue
        diff = [by_q[q][s]["f1"] - by_q[q]["vanilla"]["f1"] for q in done]
        out["systems"][s]["F1_minus_vanilla"] = round(100 * sum(diff) / len(diff), 1)
        out["systems"][s]["F1_minus_vanilla_ci95"] = bootstrap(diff)
    if "gold" in systems and done:  # system -> [paired F1 difference to the gold passages, 95% CI]
        out["F1_minus_gold"] = {s: [round(100 * sum(d) / len(d), 1), bootstrap(d)] for s in systems if s != "gold"
                                for d in [[by_q[q][s]["f1"] - by_q[q]["gold"]["f1"] for q in done]]}
    types = sorted({by_q[q][systems[0]]["type"] for q in done}) if done else []
    if {"atomicrag", "atomicrag_budget"} <= set(systems) and done:  # the reader-size rule's paired gain
        def gain(qs: list[str]) -> list[Any]:
            d = [by_q[q]["atomicrag"]["f1"] - by_q[q]["atomicrag_budget"]["f1"] for q in qs]
            return [round(100 * sum(d) / len(d), 1), bootstrap(d), len(d)]

        out["F1_sized_minus_budget"] = {"all": gain(done), **{
            t: gain([q for q in done if by_q[q][systems[0]]["type"] == t]) for t in types}}
    out["F1_by_type"] = {  # question type -> [n, {system: F1}]
        t: [len(qs), {s: round(100 * sum(by_q[q][s]["f1"] for q in qs) / len(qs), 1) for s in systems}]
        for t in types for qs in [[q for q in done if by_q[q][systems[0]]["type"] == t]]}
    if "vanilla" in systems:  # question type -> {system: [paired F1 difference to vanilla, 95% CI]}
        out["F1_minus_vanilla_by_type"] = {t: {s: [round(100 * sum(d) / len(d), 1), bootstrap(d)]
                                               for s in systems if s != "vanilla"
                                               for d in [[by_q[q][s]["f1"] - by_q[q]["vanilla"]["f1"] for q in qs]]}
                                           for t in types
                                           for qs in [[q for q in done if by_q[q][systems[0]]["type"] == t]]}
    return out


def print_summary(summary: dict[str, Any]) -> None:
    print(f"n = {summary['n']} questions answered by every system (2Wiki DEV {summary.get('half') or 'odd'} half)")
    print(f"{'system':18s} {'EM [95% CI]':>20s} {'F1 [95% CI]':>20s} {'F1 - vanilla [95% CI]':>26s} "
          f"{'gold in reply':>14s} {'failed':>7s} {'ctx tok':>8s} {'R@5':>6s}")
    for s, m in summary["systems"].items():
        d = (f"{m['F1_minus_vanilla']:+.1f} {m['F1_minus_vanilla_ci95']}" if "F1_minus_vanilla" in m else "—")
        print(f"{s:18s} {m['EM']:5.1f} {m['EM_ci95']!s:>14s} {m['F1']:5.1f} {m['F1_ci95']!s:>14s} {d:>26s} "
              f"{m['gold_in_reply']:14.1f} {m['failed']:7d} {m['context_tokens_mean']:8.1f} {m['R@5']!s:>6s}")
    if summary.get("F1_sized_minus_budget"):
        print("  F1 atomicrag - atomicrag_budget (paired): " + ", ".join(
            f"{t} {d:+.1f} {ci} n={n}" for t, (d, ci, n) in summary["F1_sized_minus_budget"].items()))
    if summary.get("F1_minus_gold"):
        print("  F1 - gold passages: " + ", ".join(f"{s} {d:+.1f} {ci}" for s, (d, ci) in summary["F1_minus_gold"].items()))
    for t, (n, f1) in summary.get("F1_by_type", {}).items():
        diffs = summary.get("F1_minus_vanilla_by_type", {}).get(t, {})
        print(f"  F1 on {t} (n = {n}): " + ", ".join(
            f"{s} {v:.1f}" + (f" ({diffs[s][0]:+.1f} {diffs[s][1]})" if s in diffs else "") for s, v in f1.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=333, help="first n questions of the half")
    ap.add_argument("--half", default="odd", choices=HALF_CHOICES,
                    help="DEV questions: odd (1, never tuned on), even (0, where settings were chosen) or all")
    ap.add_argument("--systems", default="atomicrag,vanilla,gold", help=f"comma list of {SYSTEMS}")
    ap.add_argument("--llm", default="vllm_cpu_qwen05b", help="conf/llm/<name>.yaml")
    ap.add_argument("--embedder", default="minilm", help="minilm (ONNX, the default) or conf/embedder/<name>.yaml")
    ap.add_argument("--data-dir", default="auto", help="paths.data_dir (auto: ./data, ../shared/data, then the shipped smoke sets)")
    ap.add_argument("--split", default="dev", help="dev (the benchmark) or smoke (a plumbing check)")
    ap.add_argument("--context-tokens", type=int, default=600, help="reader context budget (regex tokens), every system")
    ap.add_argument("--merge-window-repeats", type=int, default=1, choices=[0, 1],
                    help="atomizer.merge_window_repeats of the 2Wiki index (0: an index built before window merging)")
    ap.add_argument("--atoms-context", type=int, default=25, help="atomicrag_atoms: atoms in the paper's context")
    ap.add_argument("--max-tokens", type=int, default=384, help="reader completion budget")
    ap.add_argument("--answer-followup", default="auto", choices=["auto", "continue", "ask", "none"],
                    help="reader.answer_followup: a reply without 'Answer:' gets a short call for the span")
    ap.add_argument("--set", action="append", default=[], metavar="OVERRIDE",
                    help="a Hydra override applied to every system, e.g. --set retriever.top_k=10 (repeatable)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--llm-threads", type=int, default=0, help="cores the vLLM server computes on (0: the config's)")
    ap.add_argument("--block", type=int, default=32, help="questions per block (every system answers it)")
    ap.add_argument("--cache-dir", default="cache")
    ap.add_argument("--out", default="results/qa_2wiki/odd333")
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument("--wait-for", help="answer AtomicRAG's rows once this file exists (its index build is done)")
    args = ap.parse_args()
    args.half = half_name(args.half)
    args.systems = [s for s in args.systems.split(",") if s]
    if unknown := set(args.systems) - set(SYSTEMS):
        sys.exit(f"unknown systems {sorted(unknown)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_file = out / "answers.jsonl"
    if not args.summary_only:
        run(args, rows_file)
    rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
    summary = summarize(rows, args.systems)
    summary.update(run_flags(out / RUNS_FILE, args))
    summary["command"] = " ".join(sys.argv)  # this (summary) call; the answering runs are in "runs"
    summary["commit"] = git_state(ROOT).get("commit")  # the code that summarised the rows
    write_json_atomic(out / "summary.json", summary, indent=1)
    print_summary(summary)


RUNS_FILE = "runs.json"  # one entry per answering run of the folder (a resumed run adds one)
ANSWER_FLAGS = ("llm", "context_tokens", "merge_window_repeats", "max_tokens", "answer_followup", "half")


def run_flags(runs_file: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The flags that made the answers: the answering runs' (``runs.json``), not this call's.

    A folder answered before ``runs.json`` existed has only the summary call's flags, and says so."""
    if not runs_file.is_file():
        return {**{k: getattr(args, k) for k in ANSWER_FLAGS}, "n_requested": args.n,
                "flags_from": "the summary call (this folder has no runs.json)"}
    runs = json.loads(runs_file.read_text())
    last = runs[-1]["flags"]
    out: dict[str, Any] = {k: last.get(k) for k in ANSWER_FLAGS}
    out["n_requested"] = last.get("n")
    differing = sorted(k for k in ANSWER_FLAGS if len({json.dumps(r["flags"].get(k)) for r in runs}) > 1)
    if differing:  # rows answered under different flags: the summary mixes them, and says which
        out["flags_differ_between_runs"] = differing
    out["flags_from"] = RUNS_FILE
    out["runs"] = runs
    return out


def run(args: argparse.Namespace, rows_file: Path) -> None:
    from atomicrag.data.loaders import load_dataset
    from atomicrag.engine.engine import ConfigModels, Engine
    from atomicrag.llm.accounting import Accountant

    prov = Provenance.start()
    cfg = base_config(args)
    data = load_dataset(cfg.dataset, cfg.paths.resolved_data_dir(dataset=cfg.dataset))
    questions = select_half(data.questions, args.half)[: args.n]  # the odd half (default): never tuned on
    models = ConfigModels(cfg, Accountant())  # one embedder and one LLM for every system
    t0 = time.perf_counter()
    ctx, ranked = passage_contexts(args, cfg, data, questions, models)
    print(f"passage contexts for {len(questions)} questions in {time.perf_counter() - t0:.0f} s; load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    pending = [s for s in args.systems if s.startswith("atomicrag")]
    done: set[tuple[str, str]] = set()
    if rows_file.exists():  # resume: a stopped run keeps its answers
        done = {(r["id"], r["system"]) for r in map(json.loads, rows_file.read_text().splitlines()) if r}
    units = [(start, system) for start in range(0, len(questions), args.block) for system in args.systems]
    try:
        # the Engine's reader: the config's sampling (llm.temperature/seed) and reader.max_tokens (--max-tokens)
        reader = Engine(cfg, models).reader("precise")
        print(f"reader follow-up for replies without 'Answer:': {reader.followup}", flush=True)
        while True:
            # AtomicRAG's rows wait for its index (--wait-for: a file the index build writes when done,
            # e.g. benchmarks/tune_retrieval.py's --json); the other systems answer meanwhile.
            if pending and (not args.wait_for or Path(args.wait_for).exists()):
                t0 = time.perf_counter()
                more, more_ranked = atomic_contexts(args, cfg, data, questions, models)
                ctx.update(more)
                ranked.update(more_ranked)
                pending = []
                print(f"AtomicRAG contexts in {time.perf_counter() - t0:.0f} s", flush=True)
            unit = next(((start, system) for start, system in units if system in ctx and any(
                (q.id, system) not in done for q in questions[start:start + args.block])), None)
            if unit is None:
                if not pending:
                    break
                time.sleep(15)
                continue
            start, system = unit
            todo = [i for i in range(start, min(start + args.block, len(questions)))
                    if (questions[i].id, system) not in done]
            t1 = time.perf_counter()
            outs = reader.answer([questions[i].question for i in todo], [ctx[system][i] for i in todo])
            with rows_file.open("a") as f:
                for i, o in zip(todo, outs):
                    row = answer_row(questions[i], system, o, ctx[system][i],
                                     ranked.get(system, [None] * len(questions))[i])
                    # which model answered, under which budgets: rows of a resumed run stay attributable
                    row.update(model=cfg.llm.model, max_tokens=args.max_tokens,
                               context_budget=args.context_tokens)
                    f.write(json.dumps(row) + "\n")
                    done.add((questions[i].id, system))
            print(f"[{time.strftime('%H:%M:%S')}] {system:16s} q {todo[0]}-{todo[-1]}: "
                  f"{time.perf_counter() - t1:5.1f} s, failed {sum(o.failed for o in outs)}", flush=True)
        record_run(rows_file.parent / RUNS_FILE, args, prov.finish(
            cfg, data_files=data.files, uses_llm=models.llm_built,
            extra={"questions": len(questions), "systems": args.systems}))
    finally:
        models.close()


def record_run(runs_file: Path, args: argparse.Namespace, provenance: dict[str, Any]) -> None:
    """Append this answering run (its flags and provenance) to ``runs.json``, atomically."""
    runs = json.loads(runs_file.read_text()) if runs_file.is_file() else []
    flags = {k: v for k, v in vars(args).items() if k != "summary_only"}
    runs.append({"flags": flags, "provenance": provenance})
    write_json_atomic(runs_file, runs, indent=1)


def answer_row(q: Any, system: str, o: Any, context: list[Any], rank: list[str] | None) -> dict[str, Any]:
    """One answers.jsonl row: the parsed span, the full reply, EM/F1 (a failed call scores 0)."""
    from atomicrag.evaluate.metrics import exact_match, normalize_answer, recall_at_k, token_f1
    from atomicrag.retrieve.reader_context import count_tokens

    golds = list(q.answers)
    return {
        "id": q.id, "system": system, "type": q.question_type, "answers": golds,
        "answer": o.answer, "raw": o.raw, "failed": o.failed, "error": o.error, "marker_found": o.marker_found,
        "followup": o.followup,
        "em": 0.0 if o.failed else exact_match(o.answer, golds),
        "f1": 0.0 if o.failed else token_f1(o.answer, golds),
        "gold_in_reply": float(not o.failed and any(
            normalize_answer(g) and normalize_answer(g) in normalize_answer(o.raw) for g in golds)),
        "context_tokens": sum(count_tokens(c.text) for c in context), "context_items": len(context),
        "context_passages": [c.passage_id for c in context],
        "R@5": recall_at_k(rank, q.supporting_ids, 5) if rank is not None else None,
        "prompt_tokens": o.prompt_tokens, "completion_tokens": o.completion_tokens,
    }


if __name__ == "__main__":
    main()
