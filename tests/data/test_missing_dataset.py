"""A run whose dataset is not on disk stops before any work, with the command that gets it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_missing_dataset_stops_first_with_the_get_command(tmp_path: Path) -> None:
    env = {**os.environ, "ATOMICRAG_NO_PROGRESS": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "atomicrag.run", "llm=fake", "embedder=fake", "dataset=medical_dev",
           f"paths.data_dir={tmp_path / 'nodata'}", f"paths.results_dir={tmp_path / 'runs'}",
           f"paths.cache_dir={tmp_path / 'cache'}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "atomicrag data get graphbench_medical" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()  # no work started


def test_auto_data_dir_finds_the_shipped_smoke_sets_first_where_nothing_else_has_them(tmp_path: Path) -> None:
    from atomicrag.core.config import DatasetConfig, PathsConfig

    checkout = tmp_path / "checkout"  # a clone with no ../shared beside it and no ./data
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text("")
    paths = PathsConfig()
    found = paths.resolved_data_dir(checkout, dataset=DatasetConfig(name="graphbench_novel", split="smoke"))
    assert found == paths.data_roots(checkout)[-1] and (found / "graphbench_novel" / "smoke").is_dir()
    # data the user fetched into ./data comes first
    (checkout / "data" / "graphbench_novel").mkdir(parents=True)
    (checkout / "data" / "graphbench_novel" / "questions.dev.jsonl").write_text("")
    assert paths.resolved_data_dir(checkout, dataset=DatasetConfig(name="graphbench_novel", split="dev")) == \
        checkout / "data"
