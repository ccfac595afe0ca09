"""One card per sweep worker on a multi-GPU node (harness/gpu_share.claim_worker_card), tested on
the CPU with a faked device count (ATOMICRAG_GPU_COUNT): workers that run at once get distinct
cards, their vLLM servers inherit them, and a joblib sweep's workers each claim their own."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atomicrag.harness import gpu_share

ROOT = Path(__file__).resolve().parent.parent

WORKER = """
import os, subprocess, sys, time
from atomicrag.harness.gpu_share import claim_worker_card
card = claim_worker_card(sys.argv[1], wait_s=float(sys.argv[2]))
# what a vLLM server this row launches sees: the environment it inherits
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('CUDA_VISIBLE_DEVICES'))"],
                       capture_output=True, text=True).stdout.strip()
print(f"card={card} server_sees={child}", flush=True)
time.sleep(float(sys.argv[3]))
"""


def start(locks: Path, count: str, wait_s: float = 30.0, hold_s: float = 3.0,
          visible: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(PYTHONPATH=str(ROOT), ATOMICRAG_GPU_COUNT=count)
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    return subprocess.Popen([sys.executable, "-c", WORKER, str(locks), str(wait_s), str(hold_s)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_workers_running_at_once_get_distinct_cards_and_their_servers_inherit_them(tmp_path: Path) -> None:
    procs = [start(tmp_path, "4", hold_s=4.0) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-800:] for o in outs]
    got = [re.search(r"card=(\S+) server_sees=(\S+)", o[0]).groups() for o in outs]
    assert sorted(card for card, _ in got) == ["0", "1", "2", "3"]
    assert all(card == seen for card, seen in got)


def test_more_workers_than_cards_wait_then_fail_with_a_clear_message(tmp_path: Path) -> None:
    holders = [start(tmp_path, "2", hold_s=20.0) for _ in range(2)]
    time.sleep(6.0)  # both hold their cards (python start-up on a loaded machine)
    late = start(tmp_path, "2", wait_s=1.0)
    _, err = late.communicate(timeout=120)
    for p in holders:
        p.kill()
        p.communicate()
    assert late.returncode != 0
    assert "no free GPU among 0,1" in err and "more sweep workers than cards" in err


def test_one_card_or_a_slurm_given_card_is_left_alone(tmp_path: Path) -> None:
    one = start(tmp_path, "1", hold_s=0.0)
    out, err = one.communicate(timeout=120)
    assert one.returncode == 0, err
    assert "card=None server_sees=None" in out  # nothing to share: no CUDA_VISIBLE_DEVICES imposed
    slurm = start(tmp_path, "8", hold_s=0.0, visible="5")  # SLURM gave this job card 5 alone
    out, err = slurm.communicate(timeout=120)
    assert slurm.returncode == 0, err
    assert "card=None server_sees=5" in out


def test_visible_cards_reads_the_list_and_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3,5")
    monkeypatch.delenv(gpu_share.CARD_COUNT_ENV, raising=False)
    assert gpu_share.visible_cards() == ["2", "3", "5"]
    monkeypatch.setenv(gpu_share.CARD_COUNT_ENV, "2")
    assert gpu_share.visible_cards() == ["2", "3"]
    monkeypatch.setenv(gpu_share.CARD_COUNT_ENV, "two")
    with pytest.raises(ValueError, match="ATOMICRAG_GPU_COUNT must be a whole number"):
        gpu_share.visible_cards()


@pytest.mark.slow
@pytest.mark.parametrize(("launcher", "plugin"), [("local_parallel", "hydra_joblib_launcher"),
                                                  ("local_submitit", "hydra_submitit_launcher")])
def test_a_sweep_gives_each_worker_its_own_card(launcher: str, plugin: str, tmp_path: Path,
                                                smoke_data) -> None:  # noqa: ARG001
    if importlib.util.find_spec(f"hydra_plugins.{plugin}") is None:
        pytest.skip(f"{plugin} not installed")
    args = [sys.executable, "-m", "atomicrag.run", "-m", f"hydra/launcher={launcher}", "llm=fake", "embedder=fake",
            "retriever.top_k=5,10", "baselines=[]", "dataset.limit=2",
            f"paths.results_dir={tmp_path / 'runs'}", f"paths.cache_dir={tmp_path / 'cache'}",
            f"paths.llm_cache={tmp_path / 'cache' / 'llm.sqlite'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    # joblib: 2 workers; submitit's local executor gives every job the same cards 0..n-1
    # (gpus_per_node=n), of which each job claims one
    args.insert(5, "hydra.launcher.n_jobs=2" if launcher == "local_parallel" else "hydra.launcher.gpus_per_node=2")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", ATOMICRAG_GPU_COUNT="2",
               ATOMICRAG_GPU_LOCKS=str(tmp_path / "locks"))
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    # the workers' logs: Hydra's per-job .log files, submitit's .out/.err
    logs = [p for p in (tmp_path / "sweep").rglob("*") if p.is_file() and p.suffix in (".log", ".out", ".err")]
    log = proc.stdout + proc.stderr + "".join(p.read_text(errors="replace") for p in logs)
    assert proc.returncode == 0, log[-3000:]
    claims = set(re.findall(r"this sweep worker \(pid (\d+)\) runs on GPU (\d) of 0,1", log))
    assert claims, log[-3000:]
    by_pid: dict[str, set[str]] = {}
    for pid, card in claims:
        by_pid.setdefault(pid, set()).add(card)
    assert all(len(cards) == 1 for cards in by_pid.values())  # a worker keeps its card
    # (distinct cards for workers alive at once: the lock test above, where they provably overlap)
