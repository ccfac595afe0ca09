"""scripts/publish_runs.py: finished runs become records; a large run's predictions become record
rows that still re-derive its metrics, so no hand step stands between a run and its record."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import publish_runs  # noqa: E402

sys.path.remove(str(ROOT / "scripts"))


# a committed record's metrics.json, so the run passes the metrics schema as a real one does
METRICS = next(ROOT.glob("results/table2_retrieval/*/dev/*/metrics.json"))


def _run(root: Path, name: str, rows: list[dict], status: str = "finished") -> Path:
    run = root / "table2_retrieval" / "2wikimultihopqa" / "dev" / name
    run.mkdir(parents=True)
    metrics = json.loads(METRICS.read_text())
    metrics.update(status=status, n_questions=len(rows))
    (run / "metrics.json").write_text(json.dumps(metrics))
    (run / "config.yaml").write_text("retriever:\n  name: ppr_minilm\n")
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def _rows(n: int, trace_words: int) -> list[dict]:
    return [{"question_id": f"q{i}", "question_type": "compositional", "gold": [f"p{i}"],
             "answer": "x", "f1": 0.5, "recall@2": float(i % 2), "recall@5": 1.0,
             "retrieved_passages": [f"p{j}" for j in range(40)],
             "candidates": [{"text": "word " * trace_words, "score": 0.1}],
             "context": ["word " * trace_words], "seeds": [], "tokens": {"input": 10}}
            for i in range(n)]


def test_small_predictions_are_published_whole(tmp_path: Path) -> None:
    rows = _rows(3, 5)
    src = _run(tmp_path / "runs", "small", rows)
    [dest] = publish_runs.publish(tmp_path / "runs", tmp_path / "results").written
    assert (dest / "predictions.jsonl").read_bytes() == (src / "predictions.jsonl").read_bytes()
    assert not (dest / "publish.json").exists()


def test_large_predictions_become_record_rows_that_keep_every_score(tmp_path: Path) -> None:
    rows = _rows(40, 200)
    _run(tmp_path / "runs", "large", rows)
    [dest] = _publish_with_limit(tmp_path, 20_000)
    published = [json.loads(x) for x in (dest / "predictions.jsonl").read_text().splitlines()]
    assert len(published) == len(rows)
    for full, rec in zip(rows, published):
        # scores, ids and accounting stay, so intervals and re-derivation read the same values
        for key in ("question_id", "question_type", "gold", "answer", "f1", "recall@2", "recall@5", "tokens"):
            assert rec[key] == full[key]
        assert not {"candidates", "context", "seeds"} & set(rec)
        assert rec["retrieved_passages"] == full["retrieved_passages"][:5]  # deepest recall@k is 5
    note = json.loads((dest / "publish.json").read_text())
    assert note["dropped_keys"] == ["candidates", "context", "seeds"] and note["ranked_lists_cut_to"] == 5
    assert note["source_bytes"] > 20_000 >= (dest / "predictions.jsonl").stat().st_size


def _publish_with_limit(tmp_path: Path, limit: int) -> list[Path]:
    old = publish_runs.RECORD_BYTES
    publish_runs.RECORD_BYTES = limit
    try:
        return publish_runs.publish(tmp_path / "runs", tmp_path / "results").written
    finally:
        publish_runs.RECORD_BYTES = old


def test_a_record_too_large_even_as_record_rows_is_refused_and_the_old_record_stays(tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path / "runs", "large", _rows(40, 200))
    _run(tmp_path / "runs", "small", _rows(1, 1))  # sorted after "large": still published
    old = tmp_path / "results" / "table2_retrieval" / "2wikimultihopqa" / "dev" / "large"
    old.mkdir(parents=True)
    (old / "metrics.json").write_text("{}")
    monkeypatch.setattr(publish_runs, "RECORD_BYTES", 500)
    rc = publish_runs.main(["--runs", str(tmp_path / "runs"), "--to", str(tmp_path / "results")])
    out = capsys.readouterr()
    assert rc == 1 and "over the 500-byte limit" in out.err and "1 run(s) not published" in out.err
    # the run that fit is published and listed, though a refusal came before it
    assert "published 1 finished run(s)" in out.out and f"{old.parent / 'small'}" in out.out
    assert (old.parent / "small" / "metrics.json").is_file()
    assert (old / "metrics.json").read_text() == "{}" and not (old / "predictions.jsonl").exists()
    assert not list(old.parent.glob(".*publishing"))


def test_a_dry_run_refuses_what_the_real_call_refuses_and_writes_nothing(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """It used to list every finished run as "would publish", the one the real call refuses included."""
    _run(tmp_path / "runs", "large", _rows(40, 200))
    _run(tmp_path / "runs", "small", _rows(1, 1))
    monkeypatch.setattr(publish_runs, "RECORD_BYTES", 500)
    rc = publish_runs.main(["--runs", str(tmp_path / "runs"), "--to", str(tmp_path / "results"), "--dry-run"])
    out = capsys.readouterr()
    assert rc == 1 and "over the 500-byte limit" in out.err and "would publish 1 finished run(s)" in out.out
    assert not (tmp_path / "results").exists()  # nothing written, not even a scratch folder


def test_every_trace_field_of_the_question_schema_is_trimmed_and_every_other_field_kept() -> None:
    """A field added to QueryTrace is trimmed or kept by what the schema says of it, with no list
    in the script to edit."""
    from atomicrag.core.schemas import QueryTrace

    row = QueryTrace(question_id="q1", question="who?", sub_questions=["a"], decomposition={"x": 1},
                     seeds=[{"s": 1}], candidates=[[{"c": 1}]], sieve=[{"keep": 1}], context=[{"t": 1}],
                     answer="yes", raw_answer="yes.", retrieved_passages=["p"] * 9, errors=["e"],
                     cut={"answer": 8}).to_dict()
    rec = publish_runs.record_row(row, depth=5)
    assert set(row) - set(rec) == {"decomposition", "seeds", "candidates", "sieve", "context", "raw_answer"}
    assert rec["answer"] == "yes" and rec["errors"] == ["e"] and rec["cut"] == {"answer": 8}
    assert rec["retrieved_passages"] == ["p"] * 5


def test_unfinished_runs_are_not_published(tmp_path: Path) -> None:
    _run(tmp_path / "runs", "failed", _rows(2, 1), status="failed")
    assert publish_runs.publish(tmp_path / "runs", tmp_path / "results").written == []


def test_no_committed_file_is_over_the_record_limit() -> None:
    import subprocess

    try:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    sizes = {f: (ROOT / f).stat().st_size for f in files.decode().split("\0") if f and (ROOT / f).is_file()}
    assert sizes, "git ls-files listed nothing"
    assert {f: s for f, s in sizes.items() if s > publish_runs.RECORD_BYTES} == {}
