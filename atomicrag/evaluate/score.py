"""Score a finished batch of traces: per-question scores and the run's aggregate metrics.

Percentages (0-100) in ``metrics.json`` so they read like the paper's tables; the per-question
values in ``predictions.jsonl`` stay in [0, 1].
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from atomicrag.core.schemas import QueryTrace, Question
from atomicrag.evaluate.aggregate import aggregate, row_for
from atomicrag.evaluate.coverage import context_texts, coverage_scores
from atomicrag.evaluate.metrics import qa_scores

ACC_COLUMNS = {
    "Fact Retrieval": "fact",
    "Complex Reasoning": "reason",
    "Contextual Summarize": "summ",
    "Creative Generation": "creat",
}


def _pct(cell: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (round(100.0 * v, 3) if isinstance(v, float) and not k.startswith("n") else v)
        for k, v in cell.items()
    }


def judge_reference(q: Question) -> str:
    """The judge's reference: the dataset's answer, as the released evaluation passes its single
    ``ground_truth``. Aliases (MuSiQue's answer_aliases) count for EM/F1 only: joined into the
    reference they became statements the system's answer was marked as missing (FN)."""
    return q.answers[0] if q.answers else ""


def score_run(
    questions: Sequence[Question],
    traces: Sequence[QueryTrace],
    judge: Any = None,
    dataset: str = "",
    answered: bool | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(metrics, per-question records). ``judge`` is an ``AnswerAccuracyJudge`` or None.

    ``answered``: whether a reader ran. A run whose reader failed on every question still gets
    EM/F1 (zeros, beside its error rate) instead of losing the columns; None guesses from the traces.
    """
    if len(questions) != len(traces):
        raise ValueError(f"{len(questions)} questions but {len(traces)} traces")
    if answered is None:
        answered = any(t.answer or t.raw_answer for t in traces)
    verdicts = None
    if judge is not None and answered:
        refs = [judge_reference(q) for q in questions]
        verdicts = judge.judge([q.question for q in questions], [t.answer for t in traces], refs)
    rows, per_question = [], []
    for i, (q, t) in enumerate(zip(questions, traces)):
        scores: dict[str, Any] = qa_scores(
            t.answer, q.answers, retrieved=t.retrieved_passages, gold_ids=q.supporting_ids, ks=(2, 5)
        )
        if q.evidence and not q.supporting_ids:  # Graph-Bench: evidence facts instead of passage ids
            scores.update(coverage_scores(q.evidence, context_texts(t.context)))
        if not answered:  # retrieval-only run: EM/F1 of an empty answer would be misleading zeros
            scores.pop("em", None)
            scores.pop("f1", None)
        record: dict[str, Any] = {"gold": list(q.answers), "question_type": q.question_type, **scores}
        if verdicts is not None:
            v = verdicts[i]
            scores["acc"] = v.acc
            record["acc"] = v.acc
            record["judge"] = v.to_dict()
        rows.append(row_for(q, scores))
        per_question.append(record)
    agg = aggregate(rows)
    metrics: dict[str, Any] = {
        "overall": _pct(agg["overall"]),
        "by_type": {t: _pct(c) for t, c in agg["by_type"].items()},
        "by_native_type": {t: _pct(c) for t, c in agg["by_native_type"].items()},
        "avg_over_types": _pct({k: v for k, v in agg["avg"].items() if v is not None}),
    }
    if "by_group" in agg:
        metrics["by_group"] = agg["by_group"]
    if verdicts is not None:
        table = {
            col: metrics["by_type"][t]["acc"]
            for t, col in ACC_COLUMNS.items()
            if t in metrics["by_type"] and metrics["by_type"][t].get("acc") is not None
        }
        if table:
            table["avg"] = round(sum(table.values()) / len(table), 3)
        metrics["acc_table"] = table
        from atomicrag.evaluate.judge import judge_summary

        metrics["judge"] = judge_summary(verdicts)
    cov = {f"{col}_{m.split('@')[1]}": metrics["by_type"][t][m] for t, col in ACC_COLUMNS.items()
           for m in ("coverage@300", "coverage@600") if metrics["by_type"].get(t, {}).get(m) is not None}
    if cov:  # evidence coverage per type, beside ACC
        metrics["coverage_table"] = cov
    overall = metrics["overall"]
    for name in ("acc", "f1", "recall@5"):
        if overall.get(name) is not None:
            metrics["headline"] = {"name": name, "value": overall[name]}
            break
    return metrics, per_question
