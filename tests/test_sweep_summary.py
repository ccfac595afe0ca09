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
