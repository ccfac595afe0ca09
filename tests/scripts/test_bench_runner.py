"""scripts/bench.py, the benchmark runner: it names every benchmark of benchmarks/, runs one by name
with its own arguments, and every `python scripts/bench.py NAME` the docs give names one it has."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "scripts" / "bench.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUNNER), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def names() -> set[str]:
    sys.path.insert(0, str(RUNNER.parent))
    try:
        import bench
    finally:
        sys.path.remove(str(RUNNER.parent))
    return set(bench.benchmarks())


def test_list_names_every_benchmark_with_its_first_line() -> None:
    proc = run("--list")
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines()[2:] if line.strip()}
    assert listed == names() and {"retrieval", "qa", "graph_stats", "serve_llm"} <= listed
    assert "qa_stats" not in listed and "synthetic_graphs" not in listed  # helpers, not benchmarks


def test_a_benchmark_runs_by_name_with_its_arguments_and_an_unknown_one_is_refused() -> None:
    proc = run("triangles", "--help")
    assert proc.returncode == 0 and "--scales" in proc.stdout, proc.stderr
    bad = run("no_such_benchmark")
    assert bad.returncode == 2 and "--list" in bad.stderr


def test_every_runner_command_in_the_docs_names_a_benchmark() -> None:
    have = names()
    cited = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "experiments").rglob("*.md")),
                 ROOT / "scripts" / "README.md", ROOT / "Makefile", *sorted((ROOT / "benchmarks").iterdir())]:
        if path.is_file():
            for name in re.findall(r"scripts/bench\.py (\w+)", path.read_text(encoding="utf-8")):
                cited.setdefault(name, str(path.relative_to(ROOT)))
    assert cited and not {n: p for n, p in cited.items() if n not in have and n != "NAME"}
    # and no doc sends a user to a script that left scripts/ for benchmarks/
    stale = [str(p.relative_to(ROOT)) for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
             if re.search(r"scripts/bench_\w+\.(py|sh)", p.read_text(encoding="utf-8"))]
    assert not stale


def test_scripts_readme_says_what_each_entry_point_is_for() -> None:
    """scripts/ keeps entry points only (issue 47: under 15 files), each named in its README's table."""
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in (ROOT / "scripts").iterdir()
                     if p.name != "README.md" and not p.name.startswith((".", "__")))
    table = (ROOT / "scripts" / "README.md").read_text(encoding="utf-8")
    assert [e for e in entries if f"| `{e}` |" not in table] == []
    assert len([e for e in entries if not e.endswith("/")]) + 1 < 15
