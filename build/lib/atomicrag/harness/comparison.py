"""Console tables of finished runs (the quickstart's side-by-side comparison)."""
from __future__ import annotations

from typing import Any

COLUMNS = [
    ("Recall@2", ("overall", "recall@2"), "{:.1f}"),
    ("Recall@5", ("overall", "recall@5"), "{:.1f}"),
    ("EM", ("overall", "em"), "{:.1f}"),
    ("F1", ("overall", "f1"), "{:.1f}"),
    ("ACC", ("overall", "acc"), "{:.1f}"),
    ("tokens/q", ("cost", "tokens_per_query"), "{:.0f}"),
    ("s/q", ("cost", "seconds_per_query"), "{:.2f}"),
    ("retr. ms/q", ("cost", "retrieval_ms_per_query"), "{:.1f}"),
    ("LLM err %", ("error_rate_pct",), "{:.1f}"),  # failed LLM requests (failures.py)
    # questions with a failed step: also replies cut at max_tokens, which are complete requests
    ("failed q %", ("failed_q_pct",), "{:.1f}"),
]


def _get(d: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def _with_failure_pcts(m: dict[str, Any]) -> dict[str, Any]:
    out = dict(m)
    if isinstance(m.get("error_rate"), (int, float)):
        out["error_rate_pct"] = 100.0 * m["error_rate"]
    f = m.get("failures")
    if isinstance(f, dict) and f.get("questions"):
        out["failed_q_pct"] = 100.0 * f.get("failed_questions", 0) / f["questions"]
    return out


def format_comparison(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """Markdown table: one row per run, the metrics that exist in at least one run."""
    rows = [(label, _with_failure_pcts(m)) for label, m in rows]
    cols = [c for c in COLUMNS if any(_get(m, c[1]) is not None for _, m in rows)]
    header = "| system | n | " + " | ".join(c[0] for c in cols) + " |"
    sep = "|---|---:|" + "---:|" * len(cols)
    lines = [header, sep]
    for label, m in rows:
        cells = []
        for _, path, fmt in cols:
            v = _get(m, path)
            cells.append(fmt.format(v) if isinstance(v, (int, float)) else "–")
        lines.append(f"| {label} | {m.get('n_questions', '?')} | " + " | ".join(cells) + " |")
    first = rows[0][1] if rows else {}
    title = f"dataset: {first.get('dataset', '?')} ({first.get('split', '?')})"
    return title + "\n" + "\n".join(lines)
