"""Sampling uncertainty of table cells: n, 95% bootstrap intervals, paired intervals of drops.

A measured cell is a mean over questions, so its interval comes from resampling the run's
questions (``predictions.jsonl``, one line per question with its scores in [0, 1]):

- a whole-dataset cell (multi-hop columns) resamples all scored questions;
- a Graph-Bench type cell resamples the questions of that type; its "Avg." (mean over types)
  resamples within each type (a stratified bootstrap, so every type keeps its size);
- a drop (``row − base`` of one column) is a *paired* bootstrap: the same resampled question ids
  in both runs, so the interval reflects the difference, not two independent noises;
- an averaged cell (Multi-hop Avg., the 11-task Avg., Table 2's Avg.) is the mean of its
  component cells: each component's questions are resampled as for that cell, and the draws are
  averaged (``mean_strata``), so its drop (Avg. drop) is paired the same way.

Every estimator is a weighted mean of stratum means (``Strata.weights``), the weights being what
the printed value uses: Novel's cells are macro averages over novels (the released averaging), so
their strata are type × novel, resampled within each, weighted 1/novels within a type.

Percentile intervals, ``B = 2000`` resamples with a fixed seed (reproducible tables). ``n`` is the
number of questions with a value (skipped or failed judge calls are not counted unless scored 0).
"""
from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from atomicrag.engine.api import acc_type
from atomicrag.harness.report_tables.runs import GB_TYPES, Run

log = logging.getLogger(__name__)

B = 2000
LEVEL = 0.95
SEED = 0


class Strata(dict):  # type: ignore[type-arg]
    """Stratum name -> {question id: value in percent}; ``weights`` (stratum -> weight, summing to
    1) say how stratum means make the cell's value; None: equal weights."""

    def __init__(self, *args: Any, weights: dict[str, float] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.weights = weights

    def weight_of(self, keys: list[str]) -> np.ndarray:
        """Weights of ``keys`` (renormalised to sum 1 over them)."""
        w = np.array([1.0 if self.weights is None else self.weights.get(k, 0.0) for k in keys])
        return w / w.sum()


def mean_strata(parts: dict[str, Strata]) -> Strata:
    """The strata of an averaged cell: the mean of the component cells ``parts`` (column -> strata)."""
    out: dict[str, dict[str, float]] = {}
    weights: dict[str, float] = {}
    for col, s in parts.items():
        keys = [k for k in sorted(s) if s[k]]
        for k, w in zip(keys, s.weight_of(keys)):
            out[f"{col}|{k}"] = s[k]
            weights[f"{col}|{k}"] = float(w) / len(parts)
    return Strata(out, weights=weights)


def predictions(run: Run) -> list[dict[str, Any]] | None:
    """The run's per-question records (cached on the Run), or None without predictions.jsonl."""
    cached = getattr(run, "_predictions", None)
    if cached is not None:
        return cached or None
    path = run.path / "predictions.jsonl"
    rows: list[dict[str, Any]] = []
    if path.is_file():
        with path.open() as fh:
            for no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{no}: not JSON ({exc.msg})") from exc
    run._predictions = rows  # type: ignore[attr-defined]
    return rows or None


def _value(rec: dict[str, Any], metric: str) -> float | None:
    v = rec.get(metric)
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(f) else 100.0 * f


def strata(run: Run, source: tuple[str, ...]) -> Strata | None:
    """Per-question values behind a cell. ``source``: ("overall", metric) or
    ("graphbench", kind, metric) with kind in fact/reason/summ/creat/avg."""
    recs = predictions(run)
    if recs is None:
        return None
    if source[0] == "overall":
        metric = source[1]
        vals = {str(r.get("question_id", i)): v for i, r in enumerate(recs) if (v := _value(r, metric)) is not None}
        return Strata({"all": vals}) if vals else None
    if source[0] == "graphbench":
        kind, metric = source[1], source[2]
        wanted = set(GB_TYPES.values()) if kind == "avg" else {GB_TYPES[kind]}
        by_type: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
        for i, r in enumerate(recs):
            t = acc_type(str(r.get("question_type") or ""))
            if t in wanted and (v := _value(r, metric)) is not None:
                by_type[t][_group(r)][str(r.get("question_id", i))] = v
        return _macro(by_type) if by_type else None
    raise ValueError(f"unknown interval source {source!r}")


def _group(rec: dict[str, Any]) -> str:
    # the macro-averaging group of evaluate.aggregate.group_of (the novel for Graph-Bench Novel)
    return str(rec.get("group") or rec.get("source") or rec.get("corpus") or "")


def _macro(by_type: dict[str, dict[str, dict[str, float]]]) -> Strata:
    """Type (× group when a type has several: aggregate's macro average) strata, each type 1/T."""
    out: dict[str, dict[str, float]] = {}
    weights: dict[str, float] = {}
    for t, groups in by_type.items():
        if len(groups) == 1:
            out[t] = next(iter(groups.values()))
            weights[t] = 1.0 / len(by_type)
            continue
        for g, vals in groups.items():
            out[f"{t}|{g}"] = vals
            weights[f"{t}|{g}"] = 1.0 / (len(by_type) * len(groups))
    return Strata(out, weights=weights)


def n_of(s: Strata) -> int:
    return sum(len(v) for v in s.values())


def _estimate(arrays: list[np.ndarray], idx: list[np.ndarray], w: np.ndarray) -> np.ndarray:
    """Weighted sum over strata of each stratum's resampled mean: [B]."""
    return np.sum([wk * a[i].mean(axis=1) for a, i, wk in zip(arrays, idx, w)], axis=0)


def _draws(sizes: list[int], rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.integers(0, n, size=(B, n)) for n in sizes]  # [B, n] resampled positions per stratum


def _percentiles(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [50 * (1 - LEVEL), 100 - 50 * (1 - LEVEL)])
    return float(lo), float(hi)


def bootstrap_ci(s: Strata, seed: int = SEED) -> tuple[float, float] | None:
    """95% percentile interval of the (stratified) mean."""
    keys = [k for k in sorted(s) if s[k]]
    if not keys:
        return None
    arrays = [np.fromiter(s[k].values(), dtype=np.float64) for k in keys]
    rng = np.random.default_rng(seed)
    w = s.weight_of(keys) if isinstance(s, Strata) else np.full(len(keys), 1.0 / len(keys))
    return _percentiles(_estimate(arrays, _draws([len(a) for a in arrays], rng), w))


def paired_ci(row: Strata, base: Strata, sign: float = 1.0, seed: int = SEED) -> tuple[tuple[float, float], int] | None:
    """95% interval of ``sign * (mean(row) - mean(base))`` over the questions both runs scored,
    resampling question ids jointly; returns (interval, number of paired questions)."""
    keys = [k for k in sorted(set(row) & set(base))]
    pairs = [(k, sorted(set(row[k]) & set(base[k]))) for k in keys]
    pairs = [(k, ids) for k, ids in pairs if ids]
    if not pairs:
        return None
    a = [np.array([row[k][q] for q in ids]) for k, ids in pairs]
    b = [np.array([base[k][q] for q in ids]) for k, ids in pairs]
    rng = np.random.default_rng(seed)
    idx = _draws([len(ids) for _, ids in pairs], rng)
    keys = [k for k, _ in pairs]
    wr = row.weight_of(keys) if isinstance(row, Strata) else np.full(len(keys), 1.0 / len(keys))
    wb = base.weight_of(keys) if isinstance(base, Strata) else wr
    diff = sign * (_estimate(a, idx, wr) - _estimate(b, idx, wb))
    return _percentiles(diff), sum(len(ids) for _, ids in pairs)


def source_of(extract: Callable[..., Any] | None) -> tuple[str, ...] | None:
    """The per-question source an extractor declares (``runs.overall`` / ``runs.graphbench``)."""
    return getattr(extract, "per_question", None) if extract is not None else None
