"""Every shell command of the README is run by a test.

The README's ``bash`` blocks are read line by line. Each command must be claimed by an entry of
``RUN_BY`` (the test that runs it); commands run here are executed as written (in a temporary
folder, with the fake test models where a model would load). A new README command that no test
runs fails ``test_every_readme_command_is_run_by_a_test``.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_BASH = re.compile(r"^```bash[ \t]*\n(.*?)^```", re.DOTALL | re.MULTILINE)

# command prefix -> where it runs
RUN_BY = {
    "make run": "tests/test_fresh_clone.py (the quickstart's own command) + tests/test_doc_commands.py",
    "make test": "test_make_test_is_what_ci_runs (the suite itself)",
    "python -m atomicrag.run": "tests/test_doc_commands.py composes it; tests/test_fresh_clone.py runs the quickstart",
    "python scripts/publish_runs.py": "test_publish_and_make_tables_commands",
    "python scripts/make_tables.py": "test_publish_and_make_tables_commands",
    "pip install": "tests/test_install_command.py (fresh environments, the indexes stood in for offline)",
    "atomicrag setup": "tests/library/test_setup_and_readiness.py (the build with a recording runner; "
                       "--check, --dry-run)",
    "atomicrag index": "test_cli_commands",
    "atomicrag serve --stop": "test_cli_commands; tests/library/test_serve.py",
    "atomicrag serve": "tests/library/test_serve.py::test_query_reuses_the_served_vllm_server (real vLLM)",
    "atomicrag query": "test_cli_commands; tests/library/test_serve.py",
    "atomicrag serve --index": "tests/library/test_http_server.py (every endpoint, on a real socket)",
    "atomicrag data get": "tests/data/test_get.py (--from fixtures in each source's format; downloads "
                          "through a faked HTTP client: no network here)",
    "atomicrag data list": "test_cli_commands (the shipped smoke sets at least); "
                           "tests/data/test_get.py::test_data_list_prints_each_files_rows_and_hash",
}


def readme_commands() -> list[str]:
    out = []
    for block in _BASH.findall(README.read_text(encoding="utf-8")):
        for line in block.splitlines():
            cmd = shlex.split(line, comments=True)
            if cmd:
                out.append(shlex.join(cmd))
    return out


def claimed_by(cmd: str) -> str | None:
    best = max((p for p in RUN_BY if cmd == p or cmd.startswith(p + " ")), key=len, default=None)
    return best


def test_every_readme_command_is_run_by_a_test() -> None:
    cmds = readme_commands()
    assert len(cmds) >= 8
    unclaimed = [c for c in cmds if claimed_by(c) is None]
    assert not unclaimed, f"README commands no test runs: {unclaimed}"


def test_make_test_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.MULTILINE), "CI must run the README's test command"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test: setup$", makefile, re.MULTILINE) and re.search(r"^run: setup$", makefile, re.MULTILINE)


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATOMICRAG_")}
    # the fake test models where the README's commands would load MiniLM or start a server
    return {**env, "PYTHONPATH": str(ROOT), "ATOMICRAG_EMBEDDER": "fake", "ATOMICRAG_LLM": "fake",
            "ATOMICRAG_STATE_DIR": str(tmp / "state"), "HF_HUB_OFFLINE": "1"}


def _run(cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    args = shlex.split(cmd)
    if args[0] == "atomicrag":
        args = [sys.executable, "-m", "atomicrag.library.cli", *args[1:]]
    elif args[0] == "python":
        args = [sys.executable, *(str(ROOT / a) if a.startswith("scripts/") else a for a in args[1:])]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_cli_commands(tmp_path: Path) -> None:
    (tmp_path / "my_docs").mkdir()
    (tmp_path / "my_docs" / "marie.md").write_text("Marie Curie was born in Warsaw in 1867.")
    env = _env(tmp_path)
    # run elsewhere: the LLM server (real vLLM), the index server (blocks; test_http_server.py) and
    # data get (network; tests/data/test_get.py), setup (builds an environment; test_setup_and_readiness.py)
    elsewhere = ("atomicrag serve --index", "atomicrag data get", "atomicrag setup")
    cmds = [c for c in readme_commands() if c.startswith("atomicrag ") and c != "atomicrag serve"
            and not c.startswith(elsewhere)]
    assert [c.split()[1] for c in cmds] == ["index", "query", "serve", "data"]
    for cmd in cmds:
        proc = _run(cmd, tmp_path, env)
        assert proc.returncode == 0, (cmd, proc.stderr[-2000:])
    assert (tmp_path / "my_index" / "manifest.json").is_file()


def test_publish_and_make_tables_commands(tmp_path: Path) -> None:
    cmds = [c for c in readme_commands() if c.startswith("python scripts/")]
    assert len(cmds) == 2
    # a finished run where runs write (the shape tracking.write_run gives it), then the README's commands
    table = cmds[0].split()[-1]
    run = tmp_path / "runs" / table / "2wikimultihopqa" / "dev" / "example_run"
    run.mkdir(parents=True)
    # a whole metrics.json (runs are read through harness.metrics_file's schema): a committed record's
    record = next((ROOT / "results" / table).rglob("metrics.json"))
    (run / "metrics.json").write_text(record.read_text())
    (run / "config.yaml").write_text("experiment_name: x\n")
    env = _env(tmp_path)
    pub = _run(cmds[0], tmp_path, env)
    assert pub.returncode == 0, pub.stderr
    assert (tmp_path / "results" / table / "2wikimultihopqa" / "dev" / "example_run" / "metrics.json").is_file()
    # make_tables reads the records it is pointed at: a copy of the repository's own (it also
    # writes an index README.md beside them, which must not touch the tracked one)
    records = tmp_path / "records"
    shutil.copytree(ROOT / "results", records, ignore=shutil.ignore_patterns("predictions.jsonl"))
    before = (ROOT / "results" / "README.md").read_text()
    tables = _run(cmds[1] + f" --results {records} --out {tmp_path / 'tables'} --no-plots", tmp_path, env)
    assert tables.returncode == 0, tables.stderr[-2000:]
    assert any((tmp_path / "tables").glob("*.md"))
    assert (ROOT / "results" / "README.md").read_text() == before
