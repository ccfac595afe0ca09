"""scripts/record_output.sh keeps a benchmark's printed output as a record headed by how it was
made, and writes no record when the command fails."""
from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "record_output.sh"


def run(out: Path, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), str(out), *cmd], cwd=ROOT, capture_output=True, text=True)


def test_a_successful_command_leaves_its_output_under_a_provenance_header(tmp_path: Path) -> None:
    out = tmp_path / "bench" / "speed.txt"
    res = run(out, "python", "-c", "print('ratio 12.5x')", "two words")
    assert res.returncode == 0, res.stderr
    text = out.read_text()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    assert "# command: python -c print\\(\\'ratio\\ 12.5x\\'\\) two\\ words" in text  # re-runnable as shown
    assert f"# commit: {commit}" in text and "# machine: " in text and "# started: " in text
    assert "ratio 12.5x" in text and text.rstrip().endswith("# exit status: 0")
    assert not out.with_name("speed.txt.partial").exists()


def test_a_failed_command_writes_no_record_and_fails(tmp_path: Path) -> None:
    out = tmp_path / "speed.txt"
    res = run(out, "python", "-c", "import sys; print('half done'); sys.exit(3)")
    assert res.returncode == 3
    assert not out.exists()
    partial = out.with_name("speed.txt.partial")
    assert "half done" in partial.read_text() and "# exit status: 3" in partial.read_text()
