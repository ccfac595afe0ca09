"""Every committed record with per-question rows re-derives to the summary it states.

A summary edited by hand, written by an older scorer or by a summary call whose rows were
changed since, fails here: the figure quoted from it is not what its rows say. Point estimates
are recomputed (bootstrap intervals are the scripts' own, checked by their tests)."""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
QA_FOLDERS = sorted(p.parent for p in ROOT.glob("results/**/answers.jsonl") if (p.parent / "summary.json").is_file())
RUN_FOLDERS = sorted(p.parent for p in ROOT.glob("results/**/metrics.json")
                     if (p.parent / "predictions.jsonl").is_file())
COVERAGE_RECORDS = sorted(p for p in ROOT.glob("results/graphbench/*.json")
                          if any("per_question@300" in r for r in json.loads(p.read_text()).get("rows", [])))


def strip_ci(obj: Any) -> Any:
    """``obj`` without bootstrap intervals (keys ending in ``_ci95``, the [low, high] of [d, [low, high]])."""
    if isinstance(obj, dict):
        return {k: strip_ci(v) for k, v in obj.items() if not k.endswith("_ci95")}
    if isinstance(obj, list) and len(obj) in (2, 3) and isinstance(obj[0], float) and (obj[1] is None or isinstance(obj[1], list)):
        return obj[0] if len(obj) == 2 else [obj[0], obj[2]]  # [d, ci] or [d, ci, n]
    return obj


def test_there_are_records_to_check() -> None:
    assert QA_FOLDERS and RUN_FOLDERS


@pytest.mark.parametrize("folder", QA_FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_qa_summary_rederives_from_its_answer_rows(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import qa as bench_qa
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    monkeypatch.setattr(bench_qa, "bootstrap", lambda values: None)  # point estimates only (fast)
    stated = json.loads((folder / "summary.json").read_text())
    rows = [json.loads(x) for x in (folder / "answers.jsonl").read_text().splitlines() if x.strip()]
    derived = bench_qa.summarize(rows, list(stated["systems"]))
    for key in ("n", "systems", "F1_by_type", "F1_minus_vanilla_by_type", "F1_minus_gold", "F1_sized_minus_budget"):
        if key not in stated:  # a summary written before the scorer had this section
            continue
        assert strip_ci(derived.get(key)) == strip_ci(stated.get(key)), f"{folder}: {key}"


def mean_pct(values: list[float]) -> float:
    return round(100.0 * sum(values) / len(values), 3)


@pytest.mark.parametrize("folder", RUN_FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_run_metrics_rederive_from_predictions(folder: Path) -> None:
    metrics = json.loads((folder / "metrics.json").read_text())
    preds = [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines() if x.strip()]
    assert metrics["n_questions"] == len(preds), folder

    def check(cell: dict[str, Any], rows: list[dict[str, Any]], where: str) -> None:
        for key, value in cell.items():
            if key == "n" or key.startswith("n_") or not isinstance(value, float):
                continue
            vals = [r[key] for r in rows if r.get(key) is not None]
            assert cell.get(f"n_{key}", len(vals)) == len(vals), f"{folder} {where} n_{key}"
            assert value == pytest.approx(mean_pct(vals), abs=0.0011), f"{folder} {where} {key}"

    check(metrics["overall"], preds, "overall")
    by_native: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in preds:
        by_native[r["question_type"]].append(r)
    for t, cell in metrics["by_native_type"].items():
        check(cell, by_native[t], f"by_native_type[{t}]")


@pytest.mark.parametrize("record", COVERAGE_RECORDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_coverage_record_rederives_from_per_question_values(record: Path) -> None:
    rows = json.loads(record.read_text())["rows"]
    base = {r["system"]: r for r in rows}.get(rows[-1].get("baseline", "BM25 200-word windows"))
    for r in rows:
        for n in (300, 600):
            vals = r[f"per_question@{n}"]
            seen = [v for v in vals if v is not None]
            assert r[f"cov@{n}"] == round(100 * sum(seen) / len(seen), 1) and r["n"] == len(seen), (record, r["system"])
            if "vs_baseline@300" in r and base is not None:
                diff = [a - b for a, b in zip(vals, base[f"per_question@{n}"]) if a is not None and b is not None]
                assert r[f"vs_baseline@{n}"][0] == round(100 * sum(diff) / len(diff), 1), (record, r["system"])
