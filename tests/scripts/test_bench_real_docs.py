"""benchmarks/real_docs.py runs end to end (fake models here: its figures come from the real
reader, experiments/real_docs_qa) and records what its figures rest on: every question's answer,
sources and verdict, and each corpus file's package version and sha256."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_real_docs_records_every_question_and_its_corpus(tmp_path: Path) -> None:
    out = tmp_path / "rec.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks/real_docs.py"), "--set", "llm=fake",
                           "--set", "embedder=fake", "--out", str(out)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                          "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = json.loads(out.read_text())
    questions = (ROOT / "experiments" / "real_docs_qa" / "questions.jsonl").read_text().splitlines()
    assert len(rec["rows"]) == len(questions) == rec["summary"]["n"]
    assert {c["doc"] for c in rec["corpus"]} == {r["doc"] for r in rec["rows"]}
    assert all(len(c["sha256"]) == 64 and c["version"] for c in rec["corpus"])
    assert rec["summary"]["answered_with_right_citation"] == sum(r["answered"] for r in rec["rows"])
    assert rec["llm"] == "fake" and rec["commit"]
    assert not list(tmp_path.glob("cache*"))  # nothing written to the working folder
