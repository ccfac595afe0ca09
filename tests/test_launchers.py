"""Sweeps beyond one process: a 2-point multirun through the joblib launcher (local parallel) and
through submitit's local executor (the SLURM launcher's twin) gives the same metrics as the
sequential run (conf/hydra/launcher/*.yaml)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,  # three multiruns of the smoke set: ~1 min each on 2 cores
    pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher") is None
                       or importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None,
                       reason="hydra-joblib-launcher / hydra-submitit-launcher not installed"),
]

STABLE = ("overall", "by_type", "avg_over_types", "headline", "n_questions", "graph_stats", "run_name")


def sweep(tmp: Path, name: str, launcher: str | None) -> tuple[dict[str, dict], str]:
    """Run the 2-point sweep: ({run_name: the metrics that must not depend on the launcher}, log)."""
    args = [sys.executable, "-m", "atomicrag.run", "-m", "llm=fake", "embedder=fake", "retriever.top_k=5,10",
            "baselines=[]", "dataset.limit=4", f"paths.results_dir={tmp / name}",
            f"paths.cache_dir={tmp / 'cache'}", f"paths.llm_cache={tmp / 'cache' / 'llm.sqlite'}",
            f"hydra.sweep.dir={tmp / ('sweep_' + name)}"]
    if launcher:
        args.insert(4, f"hydra/launcher={launcher}")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    found = {}
    for path in (tmp / name).rglob("metrics.json"):
        m = json.loads(path.read_text())
        found[m["run_name"]] = {k: m.get(k) for k in STABLE}
    return found, proc.stdout + proc.stderr


def test_parallel_and_submitit_sweeps_match_the_sequential_run(tmp_path: Path, smoke_data) -> None:  # noqa: ARG001
    sequential, _ = sweep(tmp_path, "seq", None)  # also builds the shared stage cache once
    assert len(sequential) == 2  # top_k=5 and top_k=10 are two runs
    assert len({json.dumps(v["overall"], sort_keys=True) for v in sequential.values()}) == 2  # they differ
    for name, launcher, banner in (("joblib", "local_parallel", "Joblib.Parallel"),
                                   ("submitit", "local_submitit", "Submitit 'local' sweep")):
        got, log = sweep(tmp_path, name, launcher)
        assert banner in log  # the launcher itself ran the points, not Hydra's basic one
        assert got == sequential, f"{launcher}: metrics differ from the sequential sweep"
