"""One table over the points of a Hydra multirun, printed and written when the sweep ends.

Each point of a sweep writes ``atomicrag_point.json`` into its Hydra job folder (its overrides and
its rows: the main system and its baselines). When the multirun ends, ``SweepSummary`` (a Hydra
callback, ``conf/config.yaml``) reads every point's file from the sweep folder, so it works with
any launcher whose workers share the file system (basic, joblib, SLURM), and labels each row by
the overrides that differ between points (``retriever.top_k=10``), never by a label two points share.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

POINT_FILE = "atomicrag_point.json"


def _run_dir(results_dir: str | Path | None, m: dict[str, Any]) -> str | None:
    """The run folder a row's metrics came from (its predictions give the sweep plot its intervals)."""
    parts = [m.get(k) for k in ("experiment", "dataset", "split", "run_name")]
    if results_dir is None or not all(isinstance(p, str) and p for p in parts):
        return None
    return str(Path(results_dir).resolve().joinpath(*parts))


def write_point(output_dir: str | Path, overrides: list[str], rows: list[tuple[str, dict[str, Any]]],
                results_dir: str | Path | None = None) -> None:
    """The point's overrides, rows and their run folders, for the summary and ``make_tables --sweep``
    (atomically: a reader never sees half a file)."""
    from atomicrag.core.artifacts import write_text_atomic

    write_text_atomic(Path(output_dir) / POINT_FILE,
                      json.dumps({"overrides": list(overrides), "rows": [[label, m] for label, m in rows],
                                  "run_dirs": [_run_dir(results_dir, m) for _, m in rows]}, default=str))


def point_labels(points: list[dict[str, Any]]) -> list[str]:
    """Each point's overrides that differ between points (``a=1 b=x``); every point's label is unique
    because the points of a sweep differ in at least one override."""
    keyed = [dict(o.split("=", 1) for o in p["overrides"] if "=" in o) for p in points]
    keys = sorted({k for d in keyed for k in d})
    varying = [k for k in keys if len({d.get(k) for d in keyed}) > 1]
    return [" ".join(f"{k}={d.get(k, '–')}" for k in varying) or "(one point)" for d in keyed]


def load_points(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """The sweep's points in job order (0, 1, ..., 10: by name length, then name)."""
    files = sorted(Path(sweep_dir).glob(f"*/{POINT_FILE}"), key=lambda p: (len(p.parent.name), p.parent.name))
    return [json.loads(f.read_text(encoding="utf-8")) for f in files]


def summary_table(sweep_dir: str | Path) -> str | None:
    """The sweep's table (markdown), one row per point and system, or None without points."""
    from atomicrag.harness.comparison import format_comparison

    points = load_points(sweep_dir)
    if not points:
        return None
    rows = [(f"{label} · {system}", metrics)
            for label, point in zip(point_labels(points), points) for system, metrics in point["rows"]]
    return format_comparison(rows)


class SweepSummary(Callback):
    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        from atomicrag.core.artifacts import write_text_atomic

        sweep_dir = Path(config.hydra.sweep.dir)
        table = summary_table(sweep_dir)
        if table is None:
            return
        write_text_atomic(sweep_dir / "summary.md", table + "\n")
        print(f"\nsweep summary ({sweep_dir / 'summary.md'}):\n{table}")
