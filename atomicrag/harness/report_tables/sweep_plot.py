"""Any Hydra multirun as a plot and a table: ``make_tables --sweep DIR``.

A sweep folder holds one ``atomicrag_point.json`` per point (``harness/sweep_summary.py``: its
overrides, its rows, each row's run folder). The swept values are the overrides that differ
between points. The x axis is the first swept value that is a number on every point (log scale
when it spans 20x or more); every other swept value, and each system of a point (the main row, its
baselines), is one line. With no numeric swept value the points are categories. Each point is
plotted with its 95% bootstrap interval over the run's questions (``predictions.jsonl``) and the
table beside it gives n and the interval, so a difference between two points can be read for what
it is worth.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from atomicrag.harness.sweep_summary import POINT_FILE, load_points, point_labels

METRIC_ORDER = ("acc", "f1", "em", "recall@5", "recall@2")  # "auto": the first every row has
RESAMPLES = 2000


def _number(text: str | None) -> float | None:
    try:
        value = float(str(text))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _metric(points: list[dict[str, Any]], metric: str) -> str:
    overalls = [m.get("overall") or {} for p in points for _, m in p["rows"]]
    if metric != "auto":
        if not any(metric in o for o in overalls):
            raise ValueError(f"no point of the sweep has the metric {metric!r}; "
                             f"it has: {sorted({k for o in overalls for k in o if not k.startswith('n')})}")
        return metric
    for name in METRIC_ORDER:
        if overalls and all(name in o for o in overalls):
            return name
    raise ValueError(f"the sweep's rows share none of {METRIC_ORDER}: name one with --sweep-metric")


def interval(run_dir: str | None, metric: str, seed: int = 0) -> tuple[int, list[float]] | None:
    """(n, [low, high]) of the run's per-question ``metric`` (in points), None without predictions."""
    if not run_dir or not (Path(run_dir) / "predictions.jsonl").is_file():
        return None
    values = []
    for line in (Path(run_dir) / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            v = json.loads(line).get(metric)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                values.append(100.0 * float(v))
    if not values:
        return None
    arr = np.asarray(values)  # [n]
    draws = np.random.default_rng(seed).integers(0, len(arr), size=(RESAMPLES, len(arr)))  # [B, n]
    means = arr[draws].mean(axis=1)  # [B]
    return len(arr), [round(float(np.percentile(means, 2.5)), 1), round(float(np.percentile(means, 97.5)), 1)]


def sweep_rows(sweep_dir: str | Path, metric: str = "auto") -> tuple[str, list[dict[str, Any]]]:
    """(metric, one dict per point and system: label, swept values, system, value, n, ci)."""
    points = load_points(sweep_dir)
    if not points:
        raise ValueError(f"{sweep_dir}: no {POINT_FILE} in its job folders (is it a multirun's sweep folder?)")
    metric = _metric(points, metric)
    labels = point_labels(points)
    rows = []
    for label, point in zip(labels, points):
        swept = dict(kv.split("=", 1) for kv in label.split(" ") if "=" in kv)
        dirs = point.get("run_dirs") or [None] * len(point["rows"])
        for (system, m), run_dir in zip(point["rows"], dirs):
            value = (m.get("overall") or {}).get(metric)
            found = interval(run_dir, metric)
            n = found[0] if found else (m.get("overall") or {}).get(f"n_{metric}", m.get("n_questions"))
            rows.append({"label": label, "swept": swept, "system": system, "value": value, "n": n,
                         "ci": found[1] if found else None})
    return metric, rows


def format_rows(metric: str, rows: list[dict[str, Any]]) -> str:
    lines = [f"| point | system | {metric} | 95% CI | n |", "|---|---|---:|---|---:|"]
    for r in rows:
        value = "–" if r["value"] is None else f"{r['value']:.1f}"
        ci = "–" if r["ci"] is None else f"[{r['ci'][0]:.1f}, {r['ci'][1]:.1f}]"
        lines.append(f"| {r['label']} | {r['system']} | {value} | {ci} | {r['n'] if r['n'] is not None else '?'} |")
    return "\n".join(lines)


def plot_sweep(sweep_dir: str | Path, metric: str = "auto", out: str | Path | None = None) -> tuple[Path, str]:
    """Write ``<sweep_dir>/sweep_<metric>.png`` (or ``out``) and return it with the markdown table."""
    from atomicrag.harness.report_tables.plots import _pyplot

    metric, rows = sweep_rows(sweep_dir, metric)
    keys = list(rows[0]["swept"]) if rows else []
    numeric = [k for k in keys if all(_number(r["swept"].get(k)) is not None for r in rows)]
    x_key = numeric[0] if numeric else None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    series: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        rest = " ".join(f"{k}={v}" for k, v in r["swept"].items() if k != x_key)
        series.setdefault(f"{r['system']}" + (f" · {rest}" if rest else ""), []).append(r)
    categories = list(dict.fromkeys(r["label"] for r in rows))
    for name, pts in series.items():
        pts = [p for p in pts if p["value"] is not None]
        if not pts:
            continue
        xs = ([_number(p["swept"][x_key]) for p in pts] if x_key else [categories.index(p["label"]) for p in pts])
        order = np.argsort(xs)
        xs = [xs[i] for i in order]
        pts = [pts[i] for i in order]
        ys = [p["value"] for p in pts]
        err = [[max(0.0, p["value"] - p["ci"][0]) if p["ci"] else 0.0 for p in pts],
               [max(0.0, p["ci"][1] - p["value"]) if p["ci"] else 0.0 for p in pts]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
    if x_key:
        ax.set_xlabel(x_key)
        values = [_number(r["swept"][x_key]) for r in rows]
        if min(values) > 0 and max(values) / min(values) >= 20:
            ax.set_xscale("log")
    else:
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels(categories, rotation=20, ha="right", fontsize=7)
    ax.set_ylabel(f"{metric} (95% CI over questions)")
    ns = sorted({r["n"] for r in rows if r["n"] is not None})
    ax.set_title(f"{Path(sweep_dir).name}: {metric} per point (n = {', '.join(map(str, ns)) or '?'})", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(out) if out else Path(sweep_dir) / f"sweep_{metric.replace('@', '_at_')}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path, format_rows(metric, rows)
