#!/usr/bin/env python
"""The run plan's output tokens per stage against what committed runs with an LLM measured.

For every committed run that called an LLM (``results/**/metrics.json`` with an LLM and a measured
stage), the plan of its recorded configuration is made twice: with the assumed reply lengths
(``EXPECTED_REPLY``) and with the lengths learned from the *other* recorded runs of the same model
(leave-one-out: a run never checks a plan made from its own replies). Printed per stage: planned
and measured completion tokens, measured/planned, and whether it lies within 30%. The candidates
per sieve prompt and the atoms kept come from the run itself, as in ``tests/test_plan.py``: what is
compared is the reply-length estimate, not retrieval.

    .venv/bin/python scripts/plan_vs_measured.py --out results/plans/plan_vs_measured.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODULE = {"query_ner": "retrieve_ner", "decompose": "decompose", "sieve": "sieve", "reader": "answer"}


def llm_runs(results: Path) -> list[Path]:
    out = []
    for path in sorted(results.glob("**/metrics.json")):
        m = json.loads(path.read_text())
        modules = (m.get("cost") or {}).get("modules") or {}
        if (m.get("models") or {}).get("llm") and any(modules.get(x, {}).get("calls") for x in MODULE.values()):
            out.append(path.parent)
    return out


def compare(run: Path, data_dir: str) -> list[dict]:
    import yaml

    from atomicrag.harness.config import load_harness_config
    from atomicrag.harness.plan import plan_run

    recorded = yaml.safe_load((run / "config.yaml").read_text())
    over = [] if "context" in recorded.get("reader", {}) else ["reader.context=atoms"]
    cfg = load_harness_config(str(run / "config.yaml"), overrides=[*over, f"paths.data_dir={data_dir}",
                                                                   f"paths.results_dir={run / '_none'}"])
    metrics = json.loads((run / "metrics.json").read_text())
    sieve = metrics["stages"].get("sieve") or {}
    n = metrics["n_questions"]
    kw = {"sieve_candidates": sieve["candidates"] / sieve["prompts"] if sieve.get("prompts") else None,
          "sieve_kept": sieve["kept"] / n if sieve else None}
    learned = plan_run(cfg, replies_exclude=run, **kw)
    rows = []
    for st in learned.stages:
        module = MODULE.get(st.stage)
        m = metrics["cost"]["modules"].get(module or "", {})
        if module is None or not m.get("calls"):
            continue
        assumed_out = round(min(st.max_output_tokens / st.calls, _expected(st.stage)) * st.calls) if st.calls else 0
        measured = m["completion_tokens"]
        rows.append({"run": str(run.relative_to(ROOT)), "model": cfg.llm.model, "stage": st.stage,
                     "planned_calls": st.calls, "measured_calls": m["calls"], "measured_failures": m.get("failures", 0),
                     "measured_output_tokens": measured, "planned_output_tokens": st.output_tokens,
                     "assumed_output_tokens": assumed_out,
                     "ratio_learned": round(measured / st.output_tokens, 3) if st.output_tokens else None,
                     "ratio_assumed": round(measured / assumed_out, 3) if assumed_out else None,
                     "learned": any(a.startswith("reply tokens per question measured") and f" {st.stage} " in f" {a}"
                                    for a in learned.assumptions)})
    return rows


def _expected(stage: str) -> float:
    from atomicrag.harness.plan import EXPECTED_REPLY

    return EXPECTED_REPLY[stage]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=str(ROOT / "results"))
    ap.add_argument("--out", default=None, help="write the rows and the command here (JSON)")
    args = ap.parse_args()
    from atomicrag.core.config import PathsConfig

    data_dir = str(PathsConfig().data_roots()[-1])  # the smoke sets shipped in the package
    rows = [r for run in llm_runs(Path(args.results)) for r in compare(run, data_dir)]
    print(f"{'run':<62s} {'stage':<10s} {'measured':>9s} {'learned':>8s} {'ratio':>6s} {'assumed':>8s} {'ratio':>6s}")
    for r in rows:
        name = r["run"].split("/", 1)[1][-60:]
        print(f"{name:<62s} {r['stage']:<10s} {r['measured_output_tokens']:>9d} {r['planned_output_tokens']:>8d} "
              f"{r['ratio_learned'] or 0:>6.2f} {r['assumed_output_tokens']:>8d} {r['ratio_assumed'] or 0:>6.2f}"
              + ("" if r["learned"] else "  (no recorded run alike: assumed)"))
    within = [r for r in rows if r["ratio_learned"] is not None and abs(r["ratio_learned"] - 1) <= 0.30]
    within_assumed = [r for r in rows if r["ratio_assumed"] is not None and abs(r["ratio_assumed"] - 1) <= 0.30]
    print(f"stages within 30%: learned {len(within)}/{len(rows)}, assumed {len(within_assumed)}/{len(rows)}")
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        record = {"command": " ".join(["python", "scripts/plan_vs_measured.py", *sys.argv[1:]]), "commit": commit,
                  "rows": rows, "within_30pct_learned": len(within), "within_30pct_assumed": len(within_assumed),
                  "stages": len(rows)}
        out = Path(args.out)
        tmp = out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1))
        tmp.replace(out)


if __name__ == "__main__":
    main()
