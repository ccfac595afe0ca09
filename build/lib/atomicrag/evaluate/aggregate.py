"""Aggregate per-question scores into the paper's table cells.

- ACC table types are Graph-Bench's four (Fact Retrieval, Complex Reasoning, Contextual
  Summarize, Creative Generation); every multi-hop type (2Wiki compositional / comparison /
  bridge_comparison / inference, MuSiQue 2hop / 3hop / 4hop, HotpotQA bridge / comparison)
  counts as Complex Reasoning. Native types are reported as well.
- Within a type, the mean is taken per group first and then over groups ("macro"): Graph-Bench
  Novel is 20 novels, and the released code (scripts/average_novel_results.py) averages the
  per-novel means of each type. The group is ``meta["source"]`` (else ``corpus``); datasets with
  one group get the plain mean.
- "avg" is the mean over the types present (paper's "Avg." column); "overall" is the plain mean
  over all questions.
Values stay in [0, 1]; a metric that is None for a question (skipped, failed, not computable)
is left out of its means and counted in ``n_<metric>``.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

GRAPH_BENCH_TYPES = ("Fact Retrieval", "Complex Reasoning", "Contextual Summarize", "Creative Generation")
_CANONICAL = {t.lower(): t for t in GRAPH_BENCH_TYPES}
_CANONICAL.update({
    "contextual summarization": "Contextual Summarize",
    "fact": "Fact Retrieval", "reason": "Complex Reasoning", "reasoning": "Complex Reasoning",
    "summarize": "Contextual Summarize", "creative": "Creative Generation",
})
MULTI_HOP_TYPES = frozenset({
    "compositional", "comparison", "bridge_comparison", "inference",  # 2WikiMultiHopQA
    "bridge",  # HotpotQA (and comparison)
    "2hop", "3hop", "4hop", "multi-hop", "multihop",  # MuSiQue
})
ROW_KEYS = ("question_id", "acc_type", "native_type", "group")
_HOPS = re.compile(r"^(\d+)hop")


def acc_type(question_type: str) -> str:
    """The ACC-table type of a native question type."""
    key = (question_type or "").strip().lower()
    if key in _CANONICAL:
        return _CANONICAL[key]
    if key in MULTI_HOP_TYPES or _HOPS.match(key):
        return "Complex Reasoning"
    return question_type.strip() if question_type and question_type.strip() else "Unknown"


def native_type(question_type: str, meta: Mapping[str, Any] | None = None) -> str:
    """The dataset's own type. MuSiQue keeps it in meta["hop_type"] ("3hop1" → "3hop")."""
    hop = (meta or {}).get("hop_type")
    if isinstance(hop, str) and hop:
        m = _HOPS.match(hop)
        return f"{m.group(1)}hop" if m else hop
    return question_type.strip() if question_type and question_type.strip() else "Unknown"


def group_of(question: Any) -> str | None:
    """Macro-averaging group of a ``schemas.Question`` (the novel for Graph-Bench Novel)."""
    meta = getattr(question, "meta", None) or {}
    return meta.get("source") or getattr(question, "corpus", None)


def row_for(question: Any, scores: Mapping[str, float | None]) -> dict[str, Any]:
    """One aggregation row from a ``schemas.Question`` and its metric values
    (e.g. {"acc": 0.8, "em": 1.0, "f1": 1.0, "recall@2": 0.5})."""
    clash = set(scores) & set(ROW_KEYS)
    if clash:
        raise ValueError(f"metric names {sorted(clash)} are reserved")
    qtype = getattr(question, "question_type", "") or ""
    return {
        "question_id": getattr(question, "id", None),
        "acc_type": acc_type(qtype),
        "native_type": native_type(qtype, getattr(question, "meta", None)),
        "group": group_of(question),
        **scores,
    }


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _values(rows: Sequence[Mapping[str, Any]], metric: str) -> list[float]:
    return [float(r[metric]) for r in rows if r.get(metric) is not None]


def _cell(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str], macro: bool) -> dict[str, Any]:
    """Means of one table cell; ``macro`` averages per-group means."""
    groups: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r.get("group")].append(r)
    cell: dict[str, Any] = {"n": len(rows)}
    if macro and len(groups) > 1:
        cell["n_groups"] = len(groups)
    for m in metrics:
        vals = _values(rows, m)
        cell[f"n_{m}"] = len(vals)
        if macro and len(groups) > 1:
            cell[m] = _mean(x for g in groups.values() if (x := _mean(_values(g, m))) is not None)
        else:
            cell[m] = _mean(vals)
    return cell


def _type_order(types: Iterable[str]) -> list[str]:
    present = set(types)
    return [t for t in GRAPH_BENCH_TYPES if t in present] + sorted(present - set(GRAPH_BENCH_TYPES))


def aggregate(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] | None = None) -> dict[str, Any]:
    """Table cells from ``row_for`` rows: overall, by_type (ACC types), by_native_type, avg,
    and by_group when there is more than one group."""
    if metrics is None:
        metrics = sorted({k for r in rows for k in r if k not in ROW_KEYS})
    by_acc: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    by_native: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    by_group: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        by_acc[r["acc_type"]].append(r)
        by_native[r["native_type"]].append(r)
        by_group[r.get("group")].append(r)

    by_type = {t: _cell(by_acc[t], metrics, macro=True) for t in _type_order(by_acc)}
    out: dict[str, Any] = {
        "n": len(rows),
        "metrics": list(metrics),
        "overall": _cell(rows, metrics, macro=False),
        "by_type": by_type,
        "by_native_type": {t: _cell(by_native[t], metrics, macro=True) for t in _type_order(by_native)},
        # "Avg." of the paper's tables: the mean of the type cells, not of the questions.
        "avg": {m: _mean(c[m] for c in by_type.values() if c[m] is not None) for m in metrics},
    }
    if len(by_group) > 1:
        out["by_group"] = {
            str(g): {"overall": _cell(grows, metrics, macro=False),
                     "by_type": {t: _cell([r for r in grows if r["acc_type"] == t], metrics, macro=False)
                                 for t in _type_order(r["acc_type"] for r in grows)}}
            for g, grows in sorted(by_group.items(), key=lambda kv: str(kv[0]))
        }
    return out
