"""The plan learns reply lengths from recorded runs of the same model (issue 46 item 5): per stage,
completion tokens per question over the runs alike in what shapes that stage; the rest stays
assumed and the plan says which; a run's metrics.json sets measured beside planned with the ratio."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from atomicrag.harness.config import load_harness_config
from atomicrag.harness.plan import actual_vs_plan, plan_run, recorded_replies

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "results" / "table2_smoke" / "2wikimultihopqa" / "smoke"


def write_run(root: Path, name: str, model: str, n: int, modules_on: tuple[str, str], **tokens: int) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    modules = {m: {"calls": n, "failures": 0, "completion_tokens": t} for m, t in tokens.items()}
    (folder / "metrics.json").write_text(json.dumps({
        "models": {"llm": model}, "n_questions": n, "dataset": "2wikimultihopqa",
        "config": {"decompose": modules_on[0], "sieve": modules_on[1]}, "cost": {"modules": modules}}))
    return folder


def test_recorded_replies_per_question_over_alike_runs(tmp_path: Path) -> None:
    write_run(tmp_path, "a", "m1", 10, ("llm", "llm"), decompose=1000, sieve=300, answer=200)
    b = write_run(tmp_path, "b", "m1", 30, ("llm", "llm"), decompose=2000, sieve=900, answer=1000)
    write_run(tmp_path, "c", "m1", 20, ("llm", "none"), decompose=500, answer=4000)  # no sieve: another reader
    write_run(tmp_path, "d", "other-model", 10, ("llm", "llm"), decompose=99999)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "metrics.json").write_text("{not json")  # skipped, not fatal
    got = recorded_replies("m1", [tmp_path], shape=("2wikimultihopqa", "llm", "llm"))
    assert got["decompose"] == {"tokens_per_question": 3500 / 60, "questions": 60, "runs": 3}  # sieve does not shape it
    assert got["sieve"] == {"tokens_per_question": 1200 / 40, "questions": 40, "runs": 2}
    assert got["reader"] == {"tokens_per_question": 1200 / 40, "questions": 40, "runs": 2}
    left_out = recorded_replies("m1", [tmp_path], exclude=b, shape=("2wikimultihopqa", "llm", "llm"))
    assert left_out["sieve"] == {"tokens_per_question": 30.0, "questions": 10, "runs": 1}
    assert recorded_replies("m1", [tmp_path], shape=("musique", "llm", "llm")) == {}  # another dataset: nothing


def _committed(decompose: str, sieve: str) -> list[Path]:
    return sorted(p.parent for p in SMOKE.glob(f"*aqd-{decompose}_as-{sieve}_*/metrics.json"))


def test_a_smoke_row_plans_the_other_runs_replies(smoke_data: Path) -> None:
    runs = _committed("llm", "llm")
    assert len(runs) >= 2
    target = runs[0]
    cfg = load_harness_config(str(target / "config.yaml"), overrides=[f"paths.data_dir={smoke_data}",
                                                                      f"paths.results_dir={target / 'none'}"])
    plan = plan_run(cfg, replies_exclude=target)
    others = [json.loads((r / "metrics.json").read_text()) for r in runs[1:]]
    per_q = sum(m["cost"]["modules"]["answer"]["completion_tokens"] for m in others) / sum(m["n_questions"] for m in others)
    reader = next(s for s in plan.stages if s.stage == "reader")
    assert reader.output_tokens == round(per_q * plan.n_questions)
    assert any(a.startswith("reply tokens per question measured by recorded runs of smollm2-135m-instruct")
               and "reader" in a for a in plan.assumptions)


def test_a_model_without_recorded_runs_says_its_replies_are_assumed(smoke_data: Path) -> None:
    cfg = load_harness_config(str(_committed("llm", "llm")[0] / "config.yaml"),
                              overrides=[f"paths.data_dir={smoke_data}", "llm.model=no-such-model"])
    plan = plan_run(cfg)
    assert any("assumed (EXPECTED_REPLY; no recorded run of no-such-model alike" in a for a in plan.assumptions)


def test_measured_beside_planned_with_the_ratio() -> None:
    plan = {"stages": [{"stage": "reader", "calls": 10, "input_tokens": 5000, "output_tokens": 400},
                       {"stage": "ner", "calls": 5, "input_tokens": 100, "output_tokens": 50},
                       {"stage": "extraction", "calls": 5, "input_tokens": 100, "output_tokens": 50}]}
    modules = {"answer": {"calls": 12, "attempts": 12, "prompt_tokens": 5100, "completion_tokens": 560},
               "atomize": {"calls": 10, "completion_tokens": 90}}
    got = actual_vs_plan(plan, modules)
    assert got["reader"]["output_ratio"] == pytest.approx(1.4) and got["reader"]["output_within_30pct"] is False
    assert "output_ratio" not in got["ner"]  # one module measures ner and extraction together: no ratio
