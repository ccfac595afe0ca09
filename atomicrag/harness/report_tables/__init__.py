"""Paper tables from finished runs: measured cells beside the published numbers.

    from atomicrag.harness.report_tables import make_tables
    make_tables("results", tables=["table2_smoke"], metric="f1")

``scripts/make_tables.py`` is the command-line face. Each table is declared once, beside the
experiments that fill it (``conf/experiment/<folder>/<table>.table.yml``, :mod:`.declared`).
``experiment_names()`` lists every committed experiment (``conf/experiment/**.yaml``) as the name
``+experiment=`` takes.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from atomicrag.core.compose import CONF_DIR
from atomicrag.harness.report_tables import declared
from atomicrag.harness.report_tables.render import to_markdown, write_csv, write_index
from atomicrag.harness.report_tables.runs import Run, load_runs, parse_where
from atomicrag.harness.report_tables.table import (
    Cell,
    Column,
    Row,
    TableResult,
    TableSpec,
    build,
    with_error_column,
)

ROOT = CONF_DIR.parent  # the checkout (paper_tables.json is looked for beside it)

# table name -> spec factory(metric), in the paper's order: one per declaration file (a declared
# ``metric``, as table2_smoke's f1, wins over the one asked for)
DECLARATIONS = declared.declaration_files()
TABLES: dict[str, Callable[[str], TableSpec]] = {name: partial(declared.spec, path) for name, path in DECLARATIONS.items()}

__all__ = [
    "NEEDS_EXTERNAL_DATA", "TABLES", "Cell", "Column", "Row", "Run", "TableResult", "TableSpec", "build",
    "experiment_names", "find_paper_tables", "load_runs", "make_tables", "parse_where",
]


# experiments whose dataset needs more than the shipped smoke sets and the default offline data (HotpotQA: nothing; MuSiQue: no corpus)
NEEDS_EXTERNAL_DATA = ("hotpotqa", "musique")


def experiment_names(conf_dir: Path | str | None = None, prefix: str = "", offline_only: bool = False) -> list[str]:
    """Every committed experiment, e.g. ``['fig4/sweep', ..., 'table2/medical_wo_ergr', ...]``.

    ``prefix`` keeps the names starting with it (``'table2_smoke/'``, ``'table12/'``); ``offline_only``
    drops those whose dataset is not available offline (HotpotQA, MuSiQue)."""
    root = Path(conf_dir) if conf_dir else CONF_DIR
    exp = root / "experiment"
    names = sorted(p.relative_to(exp).with_suffix("").as_posix() for p in exp.rglob("*.yaml"))
    names = [n for n in names if n.startswith(prefix)]
    if offline_only:
        names = [n for n in names if not any(d in n for d in NEEDS_EXTERNAL_DATA)]
    return names


# the paper's published numbers, held in the package (atomicrag/published/SOURCE.md)
PUBLISHED = Path(__file__).resolve().parents[2] / "published" / "paper_tables.json"


def find_paper_tables(path: Path | str | None = None) -> Path:
    """``paper_tables.json``: the given path, else the copy the package holds."""
    candidates = [Path(path)] if path else [PUBLISHED]
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(f"paper_tables.json not found (looked at {', '.join(map(str, candidates))})")


def make_tables(
    results_dir: Path | str = "results",
    tables: Iterable[str] | None = None,
    metric: str = "acc",
    out_dir: Path | str | None = None,
    paper_tables: Path | str | dict[str, Any] | None = None,
    where: dict[str, str] | None = None,
    plots: bool = True,
) -> dict[str, dict[str, Path]]:
    """Write ``<out_dir>/<table>.md`` and ``.csv`` (+ ``.png`` for sweeps) and the index: results/README.md
    for the default ``out_dir``, ``<out_dir>/README.md`` for another.

    Returns ``{table: {"md": path, "csv": path[, "png": path]}}``."""
    results = Path(results_dir)
    out = Path(out_dir) if out_dir else results / "tables"
    paper = paper_tables if isinstance(paper_tables, dict) else json.loads(find_paper_tables(paper_tables).read_text())
    names = list(tables) if tables else list(TABLES)
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        raise ValueError(f"unknown table(s) {unknown}; known: {', '.join(TABLES)}")
    runs = load_runs(results)
    written: dict[str, dict[str, Path]] = {}
    entries = []
    for name in names:
        spec = with_error_column(TABLES[name](metric))  # failed LLM requests, %
        result = build(spec, runs, paper, where or {})
        files: dict[str, Path] = {}
        if plots and spec.plot is not None:
            png = spec.plot(result, out / f"{name}.png")
            if png is not None:
                files["png"] = png
        md = out / f"{name}.md"
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(to_markdown(result, out, files.get("png")))
        write_csv(result, out / f"{name}.csv", out)
        files = {"md": md, "csv": out / f"{name}.csv", **files}
        written[name] = files
        entries.append((result, files))
    # the index sits beside the default tables folder; tables written elsewhere get theirs there
    # (results/README.md is never rewritten by a run that put its tables in another folder)
    index_dir = results if not out_dir else out
    index_dir.mkdir(parents=True, exist_ok=True)
    write_index(_index_entries(entries, out, runs, paper, where, names, metric), index_dir)
    return written


def _index_entries(entries: list, out: Path, runs: list[Run], paper: dict[str, Any],
                   where: dict[str, str] | None, done: list[str], metric: str) -> list:
    """Index every table already on disk, not only the ones rebuilt this time."""
    out_entries = list(entries)
    for name, factory in TABLES.items():
        if name in done or not (out / f"{name}.md").is_file():
            continue
        spec = factory(metric)
        files = {k: out / f"{name}.{k}" for k in ("md", "csv", "png") if (out / f"{name}.{k}").is_file()}
        out_entries.append((build(spec, runs, paper, where or {}), files))
    order = list(TABLES)
    return sorted(out_entries, key=lambda e: order.index(e[0].spec.name))
