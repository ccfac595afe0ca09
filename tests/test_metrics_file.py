"""metrics.json has one schema (harness/metrics_file.py): the committed runs round-trip through it
byte for byte, and a missing or mistyped key is an error that names the file and the key."""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from atomicrag.harness.metrics_file import MetricsFileError, RunMetrics, read_metrics, write_metrics
from atomicrag.harness.report_tables import load_runs

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted((ROOT / "results").glob("**/metrics.json"))


# the keys a run made before failure accounting (and provenance) lacks; the committed runs were all
# re-made with them, so the older generation is derived from one by removing its keys
LATER_KEYS = ("failures", "error_rate", "status", "provenance")


def older_generation() -> dict:
    data = json.loads(next(p for p in COMMITTED if "failures" in json.loads(p.read_text())).read_text())
    return {k: v for k, v in data.items() if k not in LATER_KEYS}


def test_there_are_committed_runs_with_failure_fields() -> None:
    assert any("failures" in json.loads(p.read_text()) for p in COMMITTED)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.name[:40])
def test_committed_metrics_round_trip_byte_for_byte(path: Path, tmp_path: Path) -> None:
    m = read_metrics(path.parent)
    assert m.cost.qa_tokens == json.loads(path.read_text())["cost"]["qa_tokens"]  # typed, not a dict
    write_metrics(tmp_path, m)
    assert (tmp_path / "metrics.json").read_text() == path.read_text()


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    src = next(p for p in COMMITTED if "failures" in json.loads(p.read_text()))
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(src, folder / "metrics.json")
    return folder


def _edit(folder: Path, edit) -> None:
    data = json.loads((folder / "metrics.json").read_text())
    edit(data)
    (folder / "metrics.json").write_text(json.dumps(data))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("dataset"), "missing key 'dataset'"),
    (lambda d: d["cost"].pop("wall_seconds"), "missing key 'cost.wall_seconds'"),
    (lambda d: d.update(n_questions="667"), "key 'n_questions' should be int, not str"),
    (lambda d: d["failures"].update(chunks=1.5), "key 'failures.chunks' should be int, not float"),
    (lambda d: d["headline"].update(value=True), "key 'headline.value' should be float, not bool"),
    (lambda d: d.update(overall=[]), "key 'overall' should be dict, not list"),
    (lambda d: d.update(status=None), "key 'status' is null"),
    (lambda d: d.update(acc=1.0), "unknown key 'acc'"),
])
def test_a_missing_or_mistyped_key_names_the_file_and_the_key(run_folder: Path, edit, message: str) -> None:
    _edit(run_folder, edit)
    with pytest.raises(MetricsFileError) as info:
        read_metrics(run_folder)
    assert str(run_folder / "metrics.json") in str(info.value) and message in str(info.value)


def test_tables_skip_a_file_that_does_not_match_and_say_why(run_folder: Path, caplog) -> None:
    assert len(load_runs(run_folder.parent)) == 1
    _edit(run_folder, lambda d: d["models"].pop("embedder"))
    with caplog.at_level(logging.WARNING):
        assert load_runs(run_folder.parent) == []
    assert "missing key 'models.embedder'" in caplog.text


def test_optional_keys_stay_absent() -> None:
    old = older_generation()
    m = RunMetrics.from_dict(old, "older metrics.json")
    assert m.failures is None and m.status is None and "status" not in m.to_dict()
    assert m.to_dict() == old  # it still reads, and writes back as it was


def test_a_cpu_check_record_is_not_a_table_cell(run_folder: Path) -> None:
    """results/cpu_check/ keeps runs that show a command finishes on a small machine; make_tables
    must not put such a smoke run into a paper table."""
    results = run_folder.parent
    check = results / "cpu_check" / "table1_smoke"
    check.mkdir(parents=True)
    shutil.copy(run_folder / "metrics.json", check / "metrics.json")
    assert [r.path for r in load_runs(results)] == [run_folder]
