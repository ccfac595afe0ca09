#!/usr/bin/env python
"""Paired F1 differences between QA systems answered in different ``benchmarks/qa.py`` folders.

Each argument is ``FOLDER:SYSTEM`` (a folder's ``answers.jsonl`` rows of that system); the first
is the reference. Only questions every named system answered are compared; each row gets its F1
and EM with 95% bootstrap intervals and its paired F1 difference to the reference. Used to choose
a setting on the even half from one folder per candidate value:

    python scripts/bench.py qa_compare \\
        results/qa_2wiki/even200_reader_size/budget_and_gold:atomicrag_budget \\
        results/qa_2wiki/even200_reader_size/documents_2:atomicrag ... \\
        --json results/qa_2wiki/even200_reader_size/selection.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from qa_stats import bootstrap, write_record

from atomicrag.harness.provenance import Provenance


def rows_of(spec: str) -> tuple[str, dict[str, dict[str, Any]]]:
    folder, _, system = spec.rpartition(":")
    path = Path(folder) / "answers.jsonl"
    if not folder or not path.is_file():
        raise SystemExit(f"qa_compare: {spec!r}: expected FOLDER:SYSTEM with FOLDER/answers.jsonl")
    rows = {r["id"]: r for r in map(json.loads, path.read_text().splitlines()) if r.get("system") == system}
    if not rows:
        raise SystemExit(f"qa_compare: {path} has no rows of system {system!r}")
    return spec, rows


def compare(specs: list[str]) -> dict[str, Any]:
    named = [rows_of(s) for s in specs]
    common = sorted(set.intersection(*(set(r) for _, r in named)))
    ref = named[0][1]
    out: dict[str, Any] = {"n": len(common), "reference": specs[0], "systems": {}}
    for spec, rows in named:
        f1 = [rows[q]["f1"] for q in common]
        em = [rows[q]["em"] for q in common]
        diff = [rows[q]["f1"] - ref[q]["f1"] for q in common]
        out["systems"][spec] = {
            "F1": round(100 * sum(f1) / len(f1), 1), "F1_ci95": bootstrap(f1),
            "EM": round(100 * sum(em) / len(em), 1), "EM_ci95": bootstrap(em),
            "F1_minus_reference": round(100 * sum(diff) / len(diff), 1), "F1_minus_reference_ci95": bootstrap(diff),
            "context_tokens_mean": round(sum(rows[q]["context_tokens"] for q in common) / len(common), 1),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("specs", nargs="+", metavar="FOLDER:SYSTEM")
    ap.add_argument("--json", help="write the comparison here (with its provenance)")
    args = ap.parse_args(argv)
    if len(args.specs) < 2:
        ap.error("name at least two FOLDER:SYSTEM")
    prov = Provenance.start()
    result = compare(args.specs)
    print(f"n = {result['n']} questions answered by every system; reference {result['reference']}")
    for spec, m in result["systems"].items():
        print(f"{spec:70s} F1 {m['F1']:5.1f} {m['F1_ci95']}  EM {m['EM']:5.1f}  "
              f"F1 - ref {m['F1_minus_reference']:+.1f} {m['F1_minus_reference_ci95']}  ctx {m['context_tokens_mean']}")
    if args.json:
        files = [Path(s.rpartition(":")[0]) / "answers.jsonl" for s in args.specs]
        write_record(args.json, result, prov.finish(None, data_files=files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
