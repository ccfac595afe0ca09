"""The device check's new steps (float64 exact PPR against the CPU, the embedder's length clamp, the
plan of a published row) pass as a CPU dry run: what the lent GPU machine runs is tested here."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_device_check_dry_run_of_the_exact_solve_clamp_and_plan(tmp_path: Path) -> None:
    proc = subprocess.run(["bash", "scripts/device_check.sh", "--small", "--only=exact_ppr,embed_clamp,plan_row"],
                          cwd=ROOT, env={**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path)},
                          capture_output=True, text=True, timeout=900, check=False)
    summary = (tmp_path / "summary.txt").read_text()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[exact_ppr] rc=0" in summary and "top25_identical=16/16" in summary and "dtype=torch.float64" in summary
    assert "[embed_clamp] rc=0" in summary and "clamp ok: (2, 384)" in summary
    assert "[plan_row] rc=0" in summary and (tmp_path / "plan_table1_medical.json").is_file()
