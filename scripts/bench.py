#!/usr/bin/env python
"""The benchmark runner: run one benchmark of ``benchmarks/`` by name, with its own arguments.

    python scripts/bench.py --list                        # every benchmark, with its first line
    python scripts/bench.py retrieval --scales medium     # benchmarks/retrieval.py --scales medium
    python scripts/bench.py graph_stats --dataset 2wiki_smoke --set atomizer=sentence
    bash scripts/record_output.sh results/benchmarks/NAME_YYYYMMDD.txt python scripts/bench.py NAME ...

A Python benchmark runs in this process as ``__main__`` (what ``python benchmarks/NAME.py`` does);
a shell one (``NAME.sh``) replaces this process. Benchmarks that index or retrieve compose their
config with the one composer (``atomicrag.core.compose``) and run it through the Engine or the
library, which runs the Engine; ``--list`` says what each measures, docs/benchmarks.md what they found.
"""
from __future__ import annotations

import ast
import os
import runpy
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
# modules the benchmarks import, not benchmarks themselves
HELPERS = {"qa_stats", "synthetic_graphs", "smoke_server"}


def benchmarks() -> dict[str, Path]:
    found = {p.stem: p for p in sorted(BENCH.glob("*.py")) if not p.stem.startswith("_")}
    found.update({p.stem: p for p in sorted(BENCH.glob("*.sh"))})
    return {name: p for name, p in sorted(found.items()) if name not in HELPERS}


def summary(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        doc = ast.get_docstring(ast.parse(text)) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""
    comments = [ln.lstrip("# ").strip() for ln in text.splitlines()[1:] if ln.startswith("#")]
    return comments[0] if comments else ""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    found = benchmarks()
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print(__doc__.strip().splitlines()[0] + "\n")
        width = max(map(len, found))
        for name, path in found.items():
            print(f"  {name:<{width}}  {summary(path)}")
        return 0 if argv else 2
    name, args = argv[0], argv[1:]
    path = found.get(name.removesuffix(".py").removesuffix(".sh"))
    if path is None:
        print(f"bench: no benchmark {name!r}; `python scripts/bench.py --list` names them", file=sys.stderr)
        return 2
    if path.suffix == ".sh":
        os.execvp("bash", ["bash", str(path), *args])
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(BENCH))  # the benchmarks import their helpers as siblings
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
