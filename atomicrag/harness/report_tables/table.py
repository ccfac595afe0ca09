"""Table model and engine: match runs to rows, fill cells, compare with the published numbers.

A :class:`TableSpec` (built from a table's declaration, :mod:`.declared`) names the experiments
its runs come from, its rows (each filled by the runs of the experiments that name it) and its
columns (each an extractor from one run, or a value derived from other cells). The engine fills
every cell with the measured value, the published value from ``paper_tables.json`` and, when both
measure the same thing, their difference.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atomicrag.engine.failures import ERROR_COLUMN, FAILED_Q_COLUMN, error_rate
from atomicrag.harness.report_tables.runs import Extractor, Run, select, values_equal

Derive = Callable[[dict[str, float | None], dict[str, dict[str, float | None]]], float | None]
Published = Callable[[dict[str, Any], str], float | None]


@dataclass
class Column:
    key: str  # paper column key (published lookup) or a measured-only key
    title: str
    extract: Extractor | None = None  # measured value from the row's run on `dataset`
    dataset: str | None = None  # run dataset for this column (None: the row's dataset)
    derive: Derive | None = None  # measured value from other cells (second pass)
    measured: bool = True  # False: a published-only column
    published: bool | Published = True  # True: tables.<paper_key>.rows[row][key]; False: none
    comparable: bool = True  # show measured - published (False when the metrics differ)
    fmt: str = ".1f"
    counted: bool = True  # False: not a paper cell (the LLM error rate), left out of "measured cells filled"


@dataclass
class Row:
    label: str  # shown in the table; also the published row key
    # a further filter on the run's config (dotted key -> value or predicate), for specs built in
    # code; declared tables match on ``sources`` alone
    match: dict[str, Any] = field(default_factory=dict)
    dataset: str | None = None
    extract: dict[str, Extractor] = field(default_factory=dict)  # per-row column extractors
    x: float | None = None  # position on a sweep plot
    # (experiment, row_label) of the runs that fill the row: what the experiment files record
    sources: tuple[tuple[str, str], ...] = ()
    modules: tuple[str, ...] | None = None  # the paper modules the row's per-row extractors read (Table 7)


@dataclass
class TableSpec:
    name: str  # results/tables/<name>.md
    title: str
    paper_key: str | None  # tables.<key> in paper_tables.json
    experiments: tuple[str, ...]
    rows: list[Row]
    columns: list[Column]
    measured_label: str  # what the measured cells are, e.g. "ACC (%) by the LLM judge"
    published_label: str
    notes: list[str] = field(default_factory=list)
    # overrides the paper table: {row label: {column key: value}}, or a function of paper_tables.json
    published_rows: Any = None
    plot: Callable[[TableResult, Path], Path | None] | None = None
    readme: str = ""  # experiments/<folder>/README.md, linked from the output
    row_header: str = "Row"


# the published numbers came from the released code (docs/fidelity.md): a difference is printed
# only beside cells measured under the same fidelity preset
PUBLISHED_FIDELITY = "reference_code"


@dataclass
class Cell:
    measured: float | None = None
    published: float | None = None
    diff: float | None = None  # measured - published, only when fidelity == PUBLISHED_FIDELITY
    n: int | None = None  # questions behind the measured value (paired ones for a drop)
    ci: tuple[float, float] | None = None  # 95% bootstrap interval (paired for a drop)
    fidelity: str | None = None  # fidelity.preset of the run(s) measured: paper | reference_code | mixed
    prompts: str | None = None  # fidelity.prompts of the run(s): own | released (runs before the field: own)
    strata: Any = None  # per-question values (intervals.Strata), not rendered

    @property
    def inside(self) -> bool | None:
        """Whether the published value lies inside the interval (None: no interval or no number)."""
        if self.ci is None or self.published is None:
            return None
        return self.ci[0] <= self.published <= self.ci[1]


@dataclass
class RowResult:
    row: Row
    cells: dict[str, Cell]
    runs: dict[str, Run]  # dataset -> run used


@dataclass
class TableResult:
    spec: TableSpec
    rows: list[RowResult]
    notes: list[str]

    def measured_count(self) -> tuple[int, int]:
        cols = [c for c in self.spec.columns if c.measured and c.counted]
        done = sum(1 for r in self.rows for c in cols if r.cells[c.key].measured is not None)
        return done, len(cols) * len(self.rows)

    def column(self, key: str) -> list[float | None]:
        return [r.cells[key].measured for r in self.rows]


def _published(spec: TableSpec, paper: dict[str, Any], row: Row, col: Column) -> float | None:
    if col.published is False:
        return None
    label = row.label
    if spec.published_rows is not None:
        rows = spec.published_rows(paper) if callable(spec.published_rows) else spec.published_rows
        return _as_float((rows.get(label) or {}).get(col.key))
    table = (paper.get("tables") or {}).get(spec.paper_key or "", {})
    if callable(col.published):
        return _as_float(col.published(table, label))
    return _as_float(((table.get("rows") or {}).get(label) or {}).get(col.key))


def _as_float(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def build(spec: TableSpec, runs: list[Run], paper: dict[str, Any], where: dict[str, str]) -> TableResult:
    """Fill ``spec`` from ``runs`` (already loaded) and the published ``paper`` tables."""
    notes: list[str] = []
    results: list[RowResult] = []
    for row in spec.rows:
        used: dict[str, Run] = {}
        cells: dict[str, Cell] = {}
        for col in spec.columns:
            cell = Cell(published=_published(spec, paper, row, col))
            extract = row.extract.get(col.key) or col.extract
            if col.measured and extract is not None:
                ds = col.dataset or row.dataset
                run = _pick(spec, runs, row, ds, where, used, notes)
                if run is not None:
                    cell.measured = extract(run)
                    if cell.measured is not None:
                        _attach_interval(cell, run, extract)
            cells[col.key] = cell
        results.append(RowResult(row, cells, used))
    table = {r.row.label: {k: c.measured for k, c in r.cells.items()} for r in results}
    for res in results:  # second pass: derived cells see every extracted cell of every row
        for col in spec.columns:
            if col.derive is not None and col.measured:
                value = col.derive(table[res.row.label], table)
                res.cells[col.key].measured = value
                table[res.row.label][col.key] = value
                if value is not None:
                    _average_interval(res.cells, col)
    by_label = {r.row.label: r for r in results}
    for res in results:  # paired intervals of drops (derived ``minus_row`` cells)
        for col in spec.columns:
            paired = getattr(col.derive, "paired", None)
            cell = res.cells[col.key]
            if paired is None or cell.measured is None:
                continue
            key, base_row, sign = paired
            base = by_label.get(base_row)
            if base is None:
                continue
            mine, theirs = res.cells[key], base.cells[key]
            cell.fidelity = mine.fidelity if mine.fidelity == theirs.fidelity else "mixed"
            if mine.strata and theirs.strata:
                from atomicrag.harness.report_tables.intervals import paired_ci

                out = paired_ci(mine.strata, theirs.strata, sign)
                if out is not None:
                    cell.ci, cell.n = out
    for res in results:
        for col in spec.columns:
            cell = res.cells[col.key]
            if cell.fidelity is None and col.derive is not None and cell.measured is not None:
                fids = {c.fidelity for c in res.cells.values() if c.fidelity is not None}
                cell.fidelity = fids.pop() if len(fids) == 1 else ("mixed" if fids else None)
            if cell.prompts is None and col.derive is not None and cell.measured is not None:
                srcs = {c.prompts for c in res.cells.values() if c.prompts is not None}
                cell.prompts = "own" if "own" in srcs else (srcs.pop() if srcs else None)
            if (col.comparable and cell.measured is not None and cell.published is not None
                    and cell.fidelity == PUBLISHED_FIDELITY):
                cell.diff = cell.measured - cell.published
    notes += differences_footnote(results)
    return TableResult(spec, results, notes)


def differences_footnote(results: list[RowResult]) -> list[str]:
    """The table's footnote: the differences from the released pipeline its runs recorded."""
    from atomicrag.harness.differences import footnote, without_llm_topics

    by_row: dict[str, list[dict[str, Any]]] = {}
    older: dict[str, bool] = {}  # row -> whether a run of it prompted an LLM
    for res in results:
        for run in res.runs.values():
            diffs = run.metrics.get("differences")
            if isinstance(diffs, list):
                diffs = [d for d in diffs if isinstance(d, dict)]
                if (run.metrics.get("models") or {}).get("llm", "") is None:  # the run asked no LLM
                    diffs = without_llm_topics(diffs)  # (records made before differences() knew it)
                by_row.setdefault(res.row.label, []).extend(diffs)
            else:
                older[res.row.label] = older.get(res.row.label, False) or prompts_of(run) is not None
    lines = [f"Differences from the released pipeline: {line}" for line in footnote(by_row)]
    if older:
        prompted = [label for label, p in older.items() if p]
        lines.append("Runs made before metrics.json recorded their differences from the released pipeline: "
                     f"rows {', '.join(older)}"
                     + (f"; the LLM prompts of rows {', '.join(prompted)} were this project's own ('own prompts')."
                        if prompted else " (no LLM prompt in them)."))
    return lines


def prompts_of(run: Run) -> str | None:
    """own | released: the prompts a run's LLM stages sent (a run before fidelity.prompts existed used
    its own); None when no stage of the run prompts an LLM (sentence atoms, no decomposition,
    sieve, LLM query NER or reader), so there is nothing to mark."""
    prompted = (run.cfg("atomizer.name") in ("llm", "vocabulary")
                or run.cfg("decompose.name") not in (None, "none") or run.cfg("sieve.name") not in (None, "none")
                or run.cfg("retriever.query_entities") == "llm" or run.cfg("reader.name") not in (None, "none"))
    return str(run.cfg("fidelity.prompts") or "own") if prompted else None


def _average_interval(cells: dict[str, Cell], col: Column) -> None:
    """n and interval of an averaged cell (``mean_of``): its components' questions resampled as
    for each component, the draws averaged; the strata are kept for its paired drop."""
    from atomicrag.harness.report_tables.intervals import bootstrap_ci, mean_strata, n_of

    keys = getattr(col.derive, "components", None)
    if not keys or not all(cells[k].strata for k in keys):
        return
    s = mean_strata({k: cells[k].strata for k in keys})
    cell = cells[col.key]
    cell.strata, cell.n, cell.ci = s, n_of(s), bootstrap_ci(s)


def _attach_interval(cell: Cell, run: Run, extract: Any) -> None:
    """n, 95% interval and fidelity of a measured cell from its run's predictions.jsonl."""
    from atomicrag.harness.report_tables.intervals import bootstrap_ci, n_of, source_of, strata

    fid = run.cfg("fidelity.preset")
    cell.fidelity = str(fid) if fid not in (None, "") else None
    cell.prompts = prompts_of(run)
    source = source_of(extract)
    if source is None:
        return
    s = strata(run, source)
    if s:
        cell.strata, cell.n, cell.ci = s, n_of(s), bootstrap_ci(s)


def _pick(
    spec: TableSpec, runs: list[Run], row: Row, dataset: str | None, where: dict[str, str],
    used: dict[str, Run], notes: list[str],
) -> Run | None:
    key = dataset or "*"
    if key in used:
        return used[key]
    experiments = tuple(dict.fromkeys(e for e, _ in row.sources)) or spec.experiments
    hits = [r for r in select(runs, experiments, dataset, where) if row_matches(r, row)]
    if not hits:
        return None
    if len(hits) > 1:
        notes.append(
            f"{len(hits)} runs match row '{row.label}' on {key}; using the newest, {hits[0].path} "
            "(narrow the choice with --where KEY=VALUE)"
        )
    used[key] = hits[0]
    return hits[0]


def row_matches(run: Run, row: Row) -> bool:
    """Whether ``run`` fills ``row``: it was made by one of the row's experiments (its folder and the
    row label it recorded), and it holds the row's config filter if there is one."""
    if row.sources and (run.experiment, run.row_label) not in row.sources:
        return False
    return all(values_equal(run.cfg(k), v) for k, v in row.match.items())


# ------------------------------------------------------------------------------ derivations
def mean_of(*keys: str) -> Derive:
    """Mean of other cells of the same row, only when every one is measured."""

    def get(cells: dict[str, float | None], _table: dict[str, dict[str, float | None]]) -> float | None:
        vals = [cells.get(k) for k in keys]
        return sum(vals) / len(vals) if all(v is not None for v in vals) else None  # type: ignore[misc]

    get.components = keys  # type: ignore[attr-defined]  # its interval: intervals.mean_strata
    return get


def minus_row(key: str, base_row: str, sign: float = 1.0) -> Derive:
    """``sign * (cell[key] - base_row[key])``; sign=-1 gives the paper's 'drop' (base - row)."""

    def get(cells: dict[str, float | None], table: dict[str, dict[str, float | None]]) -> float | None:
        mine, base = cells.get(key), (table.get(base_row) or {}).get(key)
        if mine is None or base is None or cells is table.get(base_row):
            return None
        return sign * (mine - base)

    get.paired = (key, base_row, sign)  # type: ignore[attr-defined]  # paired bootstrap of the drop
    return get


def share_of(key: str, total_row: str) -> Derive:
    """Percentage of this row's ``key`` in the ``total_row``'s ``key``."""

    def get(cells: dict[str, float | None], table: dict[str, dict[str, float | None]]) -> float | None:
        mine, total = cells.get(key), (table.get(total_row) or {}).get(key)
        return 100.0 * mine / total if mine is not None and total else None

    return get


def with_error_column(spec: TableSpec) -> TableSpec:
    """``spec`` (a ``TableSpec``) plus two measured-only columns: the run's failed LLM
    requests and its questions with a failed step, in percent, so a cell computed from a run with
    failures is never read as clean."""
    if any(c.key == ERROR_COLUMN for c in spec.columns):
        return spec

    def extract(run: Any) -> float | None:
        rate = error_rate(run.metrics)
        return None if rate is None else 100.0 * rate

    def failed_questions(run: Any) -> float | None:
        f = run.metrics.get("failures")
        if not isinstance(f, dict) or not f.get("questions"):
            return None
        return 100.0 * f.get("failed_questions", 0) / f["questions"]

    col = Column(key=ERROR_COLUMN, title="LLM err. %", extract=extract, published=False, comparable=False,
                 counted=False)
    # questions with a failed step, replies cut at max_tokens included (complete requests)
    fq = Column(key=FAILED_Q_COLUMN, title="failed q. %", extract=failed_questions, published=False,
                comparable=False, counted=False)
    return dataclasses.replace(spec, columns=[*spec.columns, col, fq])
