"""A fresh clone's quickstart computes its own numbers and leaves ``git status`` clean.

The repository commits published records under ``results/`` (``scripts/publish_runs.py``); runs
write under ``runs/`` (gitignored). Before this split, the committed quickstart runs satisfied
the stage cache of a fresh clone, so ``make run`` printed numbers the machine never computed, and
a re-run rewrote six tracked files. Here the tracked tree is copied into a new git repository and
the quickstart's own command runs in it (fake models, so it takes seconds, not minutes).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


def fresh_clone(dest: Path) -> Path:
    """The repository's files (tracked, plus new ones not ignored) committed in a new repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():  # a deleted file or a venv link is not part of a clone
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "fresh clone")
    return dest


def test_quickstart_computes_and_leaves_git_status_clean(tmp_path: Path) -> None:
    """No ``../shared`` beside the clone (its parent is a fresh temporary folder): the quickstart's
    data and the paper's numbers come from the repository itself."""
    clone = fresh_clone(tmp_path / "clone")
    assert not (clone.parent / "shared").exists()
    assert (clone / "results" / "quickstart").is_dir()  # the published records are there to be ignored
    env = {**os.environ, "PYTHONPATH": str(clone), "ATOMICRAG_NO_PROGRESS": "1", "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    env = {k: v for k, v in env.items() if not (k.startswith("ATOMICRAG_") and "__" in k)}
    # `make run` is `python -m atomicrag.run $(ARGS)`: the quickstart with test models
    cmd = [sys.executable, "-m", "atomicrag.run", "llm=fake", "embedder=fake"]
    proc = subprocess.run(cmd, cwd=clone, env=env, capture_output=True, text=True, timeout=600, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert "reusing it" not in log  # computed, not read from committed files
    assert "AtomicRAG[hybrid] w/o AQD w/o AS" in proc.stdout  # the label names the retriever it ran
    assert "Vanilla RAG (dense passages)" in proc.stdout
    runs = sorted((clone / "runs" / "quickstart").rglob("metrics.json"))
    assert len(runs) == 2, log[-2000:]  # AtomicRAG and the vanilla baseline
    assert _git(clone, "status", "--porcelain") == ""  # no tracked file changed, nothing new outside ignores

    # publishing is the one deliberate step that writes records; then the tables read them
    pub = subprocess.run([sys.executable, "scripts/publish_runs.py", "quickstart"], cwd=clone, env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert pub.returncode == 0, pub.stderr
    published = {p.parent.name for p in (clone / "results" / "quickstart").rglob("metrics.json")}
    assert {p.parent.name for p in runs} <= published
    assert "published 2 finished run(s)" in pub.stdout

    # the paper tables from committed records, with the published numbers the repository holds
    out = tmp_path / "tables"
    tab = subprocess.run([sys.executable, "scripts/make_tables.py", "--table", "table2_smoke", "--out", str(out),
                          "--no-plots"], cwd=clone, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert tab.returncode == 0, tab.stderr[-3000:]
    md = (out / "table2_smoke.md").read_text()
    assert "paper_tables.json" in md and "| AtomicRAG" in md, md[:2000]
