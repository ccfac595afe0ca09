"""A multirun ends with one table over its points, each labelled by the values it swept."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from atomicrag.harness.sweep_summary import point_labels

ROOT = Path(__file__).resolve().parent.parent


def test_labels_name_the_swept_values_and_never_repeat() -> None:
    points = [{"overrides": ["reader=none", "retriever=ppr", "retriever.top_k=5"]},
              {"overrides": ["reader=none", "retriever=ppr", "retriever.top_k=10"]},
              {"overrides": ["reader=none", "retriever=hybrid", "retriever.top_k=5"]}]
    labels = point_labels(points)
    assert labels == ["retriever=ppr retriever.top_k=5", "retriever=ppr retriever.top_k=10",
                      "retriever=hybrid retriever.top_k=5"]
    assert len(set(labels)) == len(labels)


def test_a_multirun_prints_and_writes_one_summary(tmp_path: Path) -> None:
    env = {**os.environ, "ATOMICRAG_NO_PROGRESS": "1", "HF_HUB_OFFLINE": "1"}
    sweep = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "atomicrag.run", "-m", "llm=fake", "embedder=fake", "reader=none", "baselines=[]",
         "dataset.limit=2", "retriever.top_k=5,10", f"paths.results_dir={tmp_path / 'runs'}",
         f"paths.cache_dir={tmp_path / 'cache'}", f"paths.llm_cache={tmp_path / 'llm.sqlite'}",
         f"hydra.sweep.dir={sweep}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = (sweep / "summary.md").read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| retriever.top_k=")]
    assert [r.split(" · ")[0] for r in rows] == ["| retriever.top_k=5", "| retriever.top_k=10"]
    assert "sweep summary" in proc.stdout and rows[0] in proc.stdout
    # the same sweep, plotted: x = the swept top_k, each point with its n and interval
    plot = subprocess.run([sys.executable, "scripts/make_tables.py", "--sweep", str(sweep)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert plot.returncode == 0, plot.stderr[-3000:]
    assert (sweep / "sweep_recall_at_5.png").stat().st_size > 1000
    table = (sweep / "sweep_recall_at_5.md").read_text()
    cells = [line.split(" | ") for line in table.splitlines() if line.startswith("| retriever.top_k=")]
    assert [c[0] for c in cells] == ["| retriever.top_k=5", "| retriever.top_k=10"]
    assert all(c[3].startswith("[") and c[4].rstrip(" |") == "2" for c in cells)  # 95% CI, n = 2 questions


def _point(tmp: Path, job: int, overrides: list[str], scores: list[float], system: str = "AtomicRAG") -> None:
    import json

    run = tmp / "runs" / f"run{job}"
    run.mkdir(parents=True)
    (run / "predictions.jsonl").write_text("".join(json.dumps({"f1": s}) + "\n" for s in scores))
    metrics = {"overall": {"f1": 100 * sum(scores) / len(scores), "n_f1": len(scores)}, "n_questions": len(scores)}
    (tmp / "sweep" / str(job)).mkdir(parents=True)
    (tmp / "sweep" / str(job) / "atomicrag_point.json").write_text(
        json.dumps({"overrides": overrides, "rows": [[system, metrics]], "run_dirs": [str(run)]}))


def test_a_sweep_plot_has_the_swept_number_on_x_and_an_interval_per_point(tmp_path: Path) -> None:
    from atomicrag.harness.report_tables.sweep_plot import plot_sweep, sweep_rows

    for job, (damping, scores) in enumerate([("0.5", [1, 0, 1, 1]), ("0.85", [1, 1, 1, 1]), ("0.95", [0, 0, 1, 0])]):
        _point(tmp_path, job, ["llm=fake", f"retriever.damping={damping}"], scores)
    metric, rows = sweep_rows(tmp_path / "sweep")
    assert metric == "f1" and [r["swept"] for r in rows] == [{"retriever.damping": d} for d in ("0.5", "0.85", "0.95")]
    assert [r["value"] for r in rows] == [75.0, 100.0, 25.0] and {r["n"] for r in rows} == {4}
    assert rows[1]["ci"] == [100.0, 100.0] and rows[0]["ci"][0] < 75.0 < rows[0]["ci"][1]
    png, table = plot_sweep(tmp_path / "sweep")
    assert png == tmp_path / "sweep" / "sweep_f1.png" and png.stat().st_size > 1000
    assert "| retriever.damping=0.85 | AtomicRAG | 100.0 | [100.0, 100.0] | 4 |" in table


def test_a_sweep_over_names_is_plotted_by_category_and_a_missing_metric_is_named(tmp_path: Path) -> None:
    import pytest

    from atomicrag.harness.report_tables.sweep_plot import plot_sweep

    for job, preset in enumerate(["hybrid", "ppr_minilm"]):
        _point(tmp_path, job, [f"retriever={preset}"], [1, 0])
    png, table = plot_sweep(tmp_path / "sweep")
    assert png.is_file() and "| retriever=ppr_minilm | AtomicRAG | 50.0 |" in table
    with pytest.raises(ValueError, match="no point of the sweep has the metric 'acc'"):
        plot_sweep(tmp_path / "sweep", metric="acc")
