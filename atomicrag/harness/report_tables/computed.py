"""What a table declaration (``conf/experiment/<folder>/<table>.table.yml``) names but cannot hold
as data: how a cell is read from a run (extractors), computed from other cells (derivations),
looked up among the published numbers, and plotted.

Each entry is referenced by name from a declaration's column (``extract: {graphbench: avg}``,
``derive: {drop: [hotpotqa, AtomicRAG]}``) and built here with the declared arguments; the
rows, grids and columns themselves live only in the declarations (:mod:`.declared`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from atomicrag.harness.report_tables import plots
from atomicrag.harness.report_tables.runs import (
    Extractor,
    answer_prompt_tokens_per_call,
    cost,
    graph_stat,
    graphbench,
    module_seconds,
    module_tokens,
    overall,
    released_retrieval_seconds_per_query,
    retrieval_seconds_per_query,
)
from atomicrag.harness.report_tables.table import Derive, Published, mean_of, minus_row, share_of


@dataclass(frozen=True)
class Context:
    """What an extractor may read besides its declared arguments: the table's metric and the
    paper modules of the row (Table 7's rows are modules of one run)."""
    metric: str
    modules: tuple[str, ...] | None = None


def metric_label(metric: str) -> str:
    """The measured-cell description for ``metric`` (``{metric_label}`` in a declaration's text)."""
    if metric == "acc":
        return "ACC (%) from the LLM judge (Graph-Bench answer accuracy)"
    return f"{metric.upper()} (%) — no judge; NOT the paper's ACC, so no differences are computed"


def _modules(ctx: Context, modules: Sequence[str] | None) -> tuple[str, ...]:
    chosen = tuple(modules) if modules else ctx.modules
    if not chosen:
        raise ValueError("needs 'modules': give them in the column's arguments or on the row")
    return chosen


# name -> (factory(ctx, *args, **kwargs), the position of its ``metric`` argument or None). A column
# whose extractor leaves the metric to the table follows the table's metric: it is compared with
# the published ACC only when that metric is acc.
EXTRACTORS: dict[str, tuple[Callable[..., Extractor], int | None]] = {
    "graphbench": (lambda ctx, kind, metric=None: graphbench(kind, metric or ctx.metric), 1),
    "overall": (lambda ctx, metric=None: overall(metric or ctx.metric), 0),
    "graph_stat": (lambda ctx, name: graph_stat(name), None),
    "cost": (lambda ctx, name: cost(name), None),
    "retrieval_seconds_per_query": (lambda ctx: retrieval_seconds_per_query, None),
    "released_retrieval_seconds_per_query": (lambda ctx: released_retrieval_seconds_per_query, None),
    "answer_prompt_tokens_per_call": (lambda ctx: answer_prompt_tokens_per_call, None),
    "module_tokens": (lambda ctx, which="total", scale=1e-6, modules=None:
                      module_tokens(_modules(ctx, modules), which, scale), None),
    "module_seconds": (lambda ctx, modules=None: module_seconds(_modules(ctx, modules)), None),
}
# extractors that read the row's modules when the column gives none
ROW_MODULES = ("module_tokens", "module_seconds")


def sum_of(*keys: str) -> Derive:
    """Sum of other cells of the same row, only when every one is measured."""

    def get(cells: dict[str, float | None], _table: dict[str, dict[str, float | None]]) -> float | None:
        vals = [cells.get(k) for k in keys]
        return sum(vals) if all(v is not None for v in vals) else None  # type: ignore[arg-type]

    return get


def usd(key: str, usd_per_million: float) -> Derive:
    """Dollars for the tokens in cell ``key`` at a list price per million tokens."""

    def get(cells: dict[str, float | None], _table: dict[str, dict[str, float | None]]) -> float | None:
        tokens = cells.get(key)
        return None if tokens is None else tokens * float(usd_per_million) / 1e6

    return get


# name -> (factory(*args), the cell keys of the same row it reads: factory args -> keys)
DERIVATIONS: dict[str, tuple[Callable[..., Derive], Callable[..., tuple[str, ...]]]] = {
    "mean_of": (mean_of, lambda *keys: keys),
    "sum_of": (sum_of, lambda *keys: keys),
    # the paper's "drop": base row minus this row
    "drop": (lambda key, base_row: minus_row(key, base_row, sign=-1.0), lambda key, _b: (key,)),
    "minus_row": (lambda key, base_row: minus_row(key, base_row), lambda key, _b: (key,)),
    "share_of": (share_of, lambda key, _t: (key,)),
    "usd": (usd, lambda key, _p: (key,)),
}


def _drops(base: str) -> Published:
    """The published drop of column ``base`` (``tables.<key>.drops[row][base]``)."""
    return lambda table, row: ((table.get("drops") or {}).get(row) or {}).get(base)


def _ratio(numerator: str, denominator: str) -> Published:
    """A published value computed from two published cells of the row (Table 6's containment/atom)."""

    def get(table: dict[str, Any], row: str) -> float | None:
        r = (table.get("rows") or {}).get(row) or {}
        return r[numerator] / r[denominator] if r.get(denominator) and r.get(numerator) is not None else None

    return get


PUBLISHED: dict[str, Callable[..., Published]] = {"drops": _drops, "ratio": _ratio}


def text_number(paper: dict[str, Any], source: str, needle: str) -> float | None:
    """A number the paper quotes in its text (``text_numbers``: its source figure and what it is)."""
    for item in paper.get("text_numbers") or []:
        if item.get("source") == source and needle in str(item.get("what", "")):
            return float(item["value"])
    return None


def published_cells(declared: dict[str, dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Published rows for a figure that prints no table (a declaration's ``published_rows``):
    ``{row label: {"row": [table, row label], column: {"text": [source, needle]}}}``; ``row`` copies
    another table's published row, ``text`` takes a number quoted in the text."""

    def get(paper: dict[str, Any]) -> dict[str, dict[str, Any]]:
        tables = paper.get("tables") or {}
        out: dict[str, dict[str, Any]] = {}
        for label, cells in declared.items():
            row: dict[str, Any] = {}
            if "row" in cells:
                table, other = cells["row"]
                row.update(((tables.get(table) or {}).get("rows") or {}).get(other) or {})
            for key, value in cells.items():
                if key != "row":
                    row[key] = text_number(paper, *value["text"])
            out[label] = row
        return out

    return get


PLOTS: dict[str, Callable[..., Any]] = {
    "sweep": lambda x_label, log_x=False: plots.sweep_plot(x_label, log_x=log_x),
    "fig4": lambda: plots.fig4_plot,
    "fig5": lambda: plots.fig5_plot,
}
