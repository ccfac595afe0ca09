"""PNG plots for the sweeps (matplotlib, Agg backend): measured lines beside the published ones."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from atomicrag.harness.report_tables.table import TableResult

TYPES = [("fact", "Fact"), ("reason", "Reason"), ("summ", "Summ."), ("creat", "Creat."), ("avg", "Avg.")]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series(result: TableResult, key: str, which: str, xs: list[float | None]) -> tuple[list[float], list[float]]:
    px, py = [], []
    for x, row in zip(xs, result.rows):
        value = getattr(row.cells[key], which)
        if x is not None and value is not None:
            px.append(x)
            py.append(value)
    return px, py


def _yerr(result: TableResult, key: str, xs: list[float | None]) -> Any:
    """[2, n] distances to the 95% interval of each plotted measured point (0 where none)."""
    lo, hi = [], []
    for x, row in zip(xs, result.rows):
        cell = row.cells[key]
        if x is None or cell.measured is None:
            continue
        ci = cell.ci or (cell.measured, cell.measured)
        lo.append(max(0.0, cell.measured - ci[0]))
        hi.append(max(0.0, ci[1] - cell.measured))
    return [lo, hi]


def _finish(fig: Any, ax: Any, result: TableResult, path: Path) -> Path:
    done, total = result.measured_count()
    ax.set_title(f"{result.spec.title}\n(measured cells: {done}/{total})", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    return path


def sweep_plot(xlabel: str, log_x: bool) -> Callable[[TableResult, Path], Path | None]:
    """ACC per question type vs a swept value: solid = measured, dashed = published."""

    def plot(result: TableResult, path: Path) -> Path | None:
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(7, 4.2))
        xs = [r.row.x for r in result.rows]
        for i, (kind, title) in enumerate(TYPES):
            key = f"medical.{kind}"
            color, width = f"C{i}", 2.4 if kind == "avg" else 1.2
            mx, my = _series(result, key, "measured", xs)
            px, py = _series(result, key, "published", xs)
            if my:  # error bars: 95% bootstrap intervals over questions
                ax.errorbar(mx, my, yerr=_yerr(result, key, xs), fmt="o-", color=color, lw=width, capsize=3,
                            label=f"{title} measured (95% CI)")
            if py:
                ax.plot(px, py, "x--", color=color, lw=width * 0.7, alpha=0.7, label=f"{title} paper")
        if log_x:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(_metric_axis(result))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        return _finish(fig, ax, result, path)

    return plot


def _metric_axis(result: TableResult) -> str:
    label = result.spec.measured_label
    return "ACC (%)" if label.startswith("ACC") else label.split(" ")[0] + " (%) measured / ACC (%) paper"


def fig4_plot(result: TableResult, path: Path) -> Path | None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [r.row.x for r in result.rows]
    for i, (kind, title) in enumerate(TYPES):
        key = f"medical.{kind}"
        mx, my = _series(result, key, "measured", xs)
        px, py = _series(result, key, "published", xs)
        if my:
            ax.errorbar(mx, my, yerr=_yerr(result, key, xs), fmt="o-", color=f"C{i}", lw=2.4 if kind == "avg" else 1.2,
                        capsize=3, label=f"{title} measured (95% CI)")
        if py:
            ax.plot(px, py, "x", color=f"C{i}", ms=9, label=f"{title} paper (k=25)")
    ax.set_xlabel("top-k atoms per query")
    ax.set_ylabel(_metric_axis(result))
    ax.grid(alpha=0.3)
    ax2 = ax.twinx()
    mx, my = _series(result, "tokens", "measured", xs)
    px, py = _series(result, "tokens", "published", xs)
    if my:
        ax2.plot(mx, my, "s-", color="0.35", label="input tokens measured")
    if py:
        ax2.plot(px, py, "D", color="0.1", mfc="none", ms=8, label="input tokens paper")
    ax2.set_ylabel("LLM input tokens / query")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, ncol=2, loc="lower right")
    return _finish(fig, ax, result, path)


def _budget(row: Any) -> float | None:
    """x of a Fig. 5 point: the configured token budget when the run has one, else measured input tokens."""
    for run in row.runs.values():
        budget = run.cfg("sieve.context_budget")
        if budget not in (None, "null"):
            return float(budget)
    return row.cells["tokens"].measured


def fig5_plot(result: TableResult, path: Path) -> Path | None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [_budget(r) for r in result.rows]
    budgets = any(r.runs and next(iter(r.runs.values())).cfg("sieve.context_budget") for r in result.rows)
    points = sorted(
        (x, r.cells["medical.avg"].measured, r.row.label, r.cells["medical.avg"].ci) for x, r in zip(xs, result.rows)
        if x is not None and r.cells["medical.avg"].measured is not None
    )
    if points:
        err = [[max(0.0, p[1] - (p[3] or (p[1], p[1]))[0]) for p in points],
               [max(0.0, (p[3] or (p[1], p[1]))[1] - p[1]) for p in points]]
        ax.errorbar([p[0] for p in points], [p[1] for p in points], yerr=err, fmt="o-", lw=2.2, capsize=3,
                    label="AtomicRAG measured (Avg., 95% CI)")
        for x, y, label, _ci in points:
            ax.annotate(label, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.plot([512], [70.8], "x", ms=10, color="C3", label="paper: 70.8 at 512 tokens")
    ax.axhline(73.0, ls="--", color="C3", alpha=0.6, label="paper: 'around 73' beyond 512")
    ax.set_xscale("log")
    ax.set_xlabel("context budget (tokens)" if budgets else "LLM input tokens / query (measured)")
    ax.set_ylabel(_metric_axis(result))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _finish(fig, ax, result, path)
