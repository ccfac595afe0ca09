"""qa_compare pairs systems answered in different bench_qa folders: only questions all answered,
each system's F1 and its paired difference to the first, with the record's provenance."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _folder(tmp: Path, name: str, system: str, f1: dict[str, float]) -> str:
    (tmp / name).mkdir()
    (tmp / name / "answers.jsonl").write_text("".join(
        json.dumps({"id": q, "system": system, "f1": v, "em": float(v == 1.0), "context_tokens": 100}) + "\n"
        for q, v in f1.items()))
    return f"{tmp / name}:{system}"


def test_paired_differences_over_the_questions_every_system_answered(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import qa_compare
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    ref = _folder(tmp_path, "a", "atomicrag_budget", {"q1": 0.0, "q2": 1.0, "q3": 0.5, "q4": 1.0})
    new = _folder(tmp_path, "b", "atomicrag", {"q1": 1.0, "q2": 1.0, "q3": 0.5})  # q4 not answered
    out = tmp_path / "sel.json"
    assert qa_compare.main([ref, new, "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["n"] == 3 and record["reference"] == ref
    assert record["systems"][new]["F1"] == 83.3 and record["systems"][new]["F1_minus_reference"] == 33.3
    assert record["systems"][ref]["F1_minus_reference"] == 0.0
    assert record["provenance"]["data_files"] and record["provenance"]["command"]
    with pytest.raises(SystemExit, match="no rows of system"):
        qa_compare.main([ref, f"{tmp_path / 'b'}:vanilla"])
