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


def test_scripts_find_their_default_data_as_a_run_does(tmp_path: Path) -> None:
    """Benchmark scripts take their default files from ``split_files`` (``paths.data_dir=auto``), not
    from a path beside this checkout, so a clone without ``../shared`` runs them; a split that is not
    on disk is a ``DatasetMissing`` that names the file and the command that gets it."""
    import re

    import pytest

    from atomicrag.data.loaders import DatasetMissing, split_files

    qfile, cfile = split_files("2wikimultihopqa", "smoke")
    assert qfile.is_file() and cfile.is_file() and qfile.parent == cfile.parent
    with pytest.raises(DatasetMissing, match=r"questions\.dev\.jsonl not found.*atomicrag data get 2wikimultihopqa"):
        split_files("2wikimultihopqa", "dev", tmp_path)
    hard_coded = [p.name for p in sorted([*(ROOT / "scripts").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")])
                  if re.search(r'"shared"\s*/\s*"data"', p.read_text())]
    assert not hard_coded, f"scripts that default to ../shared/data instead of split_files: {hard_coded}"
