"""Issue 19, item 4: intervals on averaged cells and on Avg. drop; Novel's macro estimator."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from atomicrag.harness.report_tables.intervals import bootstrap_ci, strata
from atomicrag.harness.report_tables.runs import Run, load_runs, overall
from atomicrag.harness.report_tables.table import Column, Row, TableSpec, build, mean_of, minus_row
from tests.test_make_tables import write_run


def _preds(prefix: str, values: list[float]) -> list[dict]:
    return [{"question_id": f"{prefix}{i}", "f1": v} for i, v in enumerate(values)]


def test_averaged_cells_and_their_drop_carry_intervals(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    full_a, full_b = rng.uniform(0.4, 1.0, 60).tolist(), rng.uniform(0.2, 0.8, 40).tolist()
    abl_a = [max(0.0, v - 0.1) for v in full_a]  # the ablation costs ~10 points on every question
    abl_b = [max(0.0, v - 0.1) for v in full_b]
    for label, a, b in (("Full", full_a, full_b), ("Abl", abl_a, abl_b)):
        for ds, vals in (("dsa", a), ("dsb", b)):
            write_run(tmp_path, "tx", ds, f"{label}_{ds}", {"retriever.name": label},
                      f1=100 * float(np.mean(vals)), predictions=_preds(ds, vals))
    cols = [Column("a", "A", extract=overall("f1"), dataset="dsa", published=False),
            Column("b", "B", extract=overall("f1"), dataset="dsb", published=False),
            Column("avg", "Avg.", derive=mean_of("a", "b"), published=False)]
    cols.append(Column("avg.drop", "Avg. drop", derive=minus_row("avg", "Full", sign=-1.0), published=False))
    rows = [Row("Full", {"retriever.name": "Full"}), Row("Abl", {"retriever.name": "Abl"})]
    spec = TableSpec("tx", "t", None, ("tx",), rows, cols, "F1", "F1")
    res = {r.row.label: r.cells for r in build(spec, load_runs(tmp_path), {}, {}).rows}
    avg = res["Full"]["avg"]
    assert avg.n == 100 and avg.ci is not None
    assert avg.ci[0] < avg.measured < avg.ci[1]
    # narrower than either component (more questions), wider than zero
    assert avg.ci[1] - avg.ci[0] < res["Full"]["a"].ci[1] - res["Full"]["a"].ci[0]
    drop = res["Abl"]["avg.drop"]
    assert drop.n == 100 and drop.ci is not None
    assert drop.ci[0] < drop.measured < drop.ci[1] and drop.ci[0] > 5.0  # paired: tight around ~10
    assert drop.ci[1] - drop.ci[0] < 0.5 * (avg.ci[1] - avg.ci[0])


def test_novel_interval_is_for_the_macro_average_over_novels(tmp_path: Path) -> None:
    """A novel with one question weighs as much as one with 30 in the printed macro value; the
    interval must be for that estimator, not for the plain mean over questions."""
    recs = [{"question_id": f"a{i}", "question_type": "Fact Retrieval", "corpus": "novel_a", "acc": 1.0}
            for i in range(30)]
    recs += [{"question_id": "b0", "question_type": "Fact Retrieval", "corpus": "novel_b", "acc": 0.0}]
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    s = strata(Run(tmp_path, {}, {}), ("graphbench", "fact", "acc"))
    lo, hi = bootstrap_ci(s)
    # macro: (100 + 0) / 2 = 50, and resampling within each novel cannot move it
    assert lo == pytest.approx(50.0) and hi == pytest.approx(50.0)
    # one novel only: the plain mean (aggregate's rule), as before
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs[:30]))
    assert bootstrap_ci(strata(Run(tmp_path, {}, {}), ("graphbench", "fact", "acc"))) == (100.0, 100.0)
