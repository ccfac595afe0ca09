"""Failure accounting of a run: what failed, per module, and whether the run may count as finished.

A run's failures come from three places:

- LLM requests whose final result has ``error`` set, after the client's own retries (transport
  errors, HTTP 4xx/5xx, replies with no usable content); the accountant counts them per module;
- questions whose trace records a failed step (reader, decomposition, sieve, judge): they were
  answered from a degraded pipeline, or not at all;
- chunks the atomizer could not atomize (and vocabulary-filter batches kept unfiltered);
- under ``fidelity.extraction_replies=released``, NER/extraction replies the released reading
  could not read and turned into an empty result, as the released code does (counted per call,
  ``released_fallbacks``; they keep their empty result but count against the threshold).

``summarize_run`` puts them in ``metrics.json`` (top-level ``failures``, ``error_rate`` and
``status``). A run is ``failed`` when the failed fraction of chunks, of questions or of any
question-answering module's requests exceeds ``cfg.max_failure_rate`` (default 0: any failure).
A failed run is written for inspection but never reused as finished; the entry point exits
non-zero; a re-run retries exactly the failed items, because the LLM cache and the atomize
checkpoint store only successes (the successes of the failed run cost nothing the second time).
Atomize-module request failures alone do not fail a run: the atomizer re-asks a chunk itself,
and a chunk that still fails is counted as a failed chunk.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("atomicrag")

FINISHED, FAILED = "finished", "failed"
# modules whose failed requests are retried by the atomizer itself (chunk failures cover them)
_INDEX_MODULES = ("atomize",)


class RunFailed(RuntimeError):
    """A run (or an index build) whose failures exceed the configured threshold."""


def question_failures(record: dict[str, Any]) -> list[str]:
    """The modules that failed for one question, from its ``predictions.jsonl`` record."""
    failed: list[str] = []
    for err in record.get("errors") or []:
        failed.append(str(err).split(":", 1)[0].strip() or "error")
    if (record.get("decomposition") or {}).get("failed"):
        failed.append("decompose")
    if any(isinstance(d, dict) and d.get("failed") for d in record.get("sieve") or []):
        failed.append("sieve")
    judge = record.get("judge")
    if isinstance(judge, dict) and judge.get("errors"):
        failed.append("judge")
    return list(dict.fromkeys(failed))


def _rate(failures: int, total: int) -> float:
    return failures / total if total else 0.0


def summarize_run(threshold: float, modules: dict[str, dict[str, Any]], predictions: Iterable[dict[str, Any]],
                  atomize_stats: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"failures": {...}, "error_rate": float, "status": "finished" | "failed"}`` for metrics.json.

    ``modules``: the accountant's per-module stats (``calls``, ``failures``); ``predictions``: the
    per-question records; ``atomize_stats``: the atomize result's stats (``chunks``,
    ``failed_chunks``, ``vocab_failed_batches``), empty when nothing was atomized this run.
    """
    per_module = {
        m: {"calls": int(s.get("calls", 0)), "failures": int(s.get("failures", 0)),
            "rate": round(_rate(int(s.get("failures", 0)), int(s.get("calls", 0))), 6),
            # attempts that got no reply (a timeout, an HTTP error) and were retried or failed: the
            # server may have worked on them, and their tokens are not counted
            **({"errored_attempts": int(s["errored_attempts"])} if s.get("errored_attempts") else {})}
        for m, s in sorted(modules.items()) if s.get("calls", 0)
    }
    preds = list(predictions)
    by_question = {str(p.get("question_id", i)): question_failures(p) for i, p in enumerate(preds)}
    failed_q = sorted(q for q, mods in by_question.items() if mods)
    # replies cut by a completion budget the config chose: reported beside the failures, not in them
    cut: dict[str, list[str]] = {}
    for i, p in enumerate(preds):
        for module in p.get("cut") or {}:
            cut.setdefault(module, []).append(str(p.get("question_id", i)))
    st = atomize_stats or {}
    chunks = int(st.get("chunks", 0) or 0)
    failed_chunks = int(st.get("failed_chunks", 0) or 0) + int(st.get("vocab_failed_batches", 0) or 0)
    calls = sum(m["calls"] for m in per_module.values())
    failures = sum(m["failures"] for m in per_module.values())
    exceeded = []
    if _rate(failed_chunks, chunks) > threshold or (failed_chunks and not chunks):
        exceeded.append(f"{failed_chunks} of {chunks} chunks failed to atomize")
    fallbacks = {call: int(st.get(f"released_fallback_{call}", 0) or 0) for call in ("ner", "extraction")}
    for call, n in fallbacks.items():
        if _rate(n, chunks) > threshold:
            exceeded.append(f"{n} of {chunks} {call} replies were unreadable (read as empty, as released)")
    if _rate(len(failed_q), len(preds)) > threshold:
        exceeded.append(f"{len(failed_q)} of {len(preds)} questions had a failed step")
    for m, s in per_module.items():
        if m not in _INDEX_MODULES and s["rate"] > threshold:
            exceeded.append(f"{s['failures']} of {s['calls']} {m} requests failed")
    summary = {
        "llm_requests": calls, "llm_failures": failures, "by_module": per_module,
        "questions": len(preds), "failed_questions": len(failed_q), "failed_question_ids": failed_q[:100],
        "chunks": chunks, "failed_chunks": failed_chunks,
        "cut_by_budget": {m: {"questions": len(ids), "question_ids": ids[:100],
                              "budget": next(iter({(p.get("cut") or {}).get(m) for p in preds} - {None}), None)}
                          for m, ids in sorted(cut.items())},
        "threshold": threshold, "exceeded": exceeded,
    }
    if any(f"released_fallback_{c}" in st for c in fallbacks):  # only runs that read replies as released
        summary["released_fallbacks"] = fallbacks
    return {"failures": summary, "error_rate": round(_rate(failures, calls), 6),
            "status": FAILED if exceeded else FINISHED}


def format_failures(label: str, metrics: dict[str, Any]) -> str:
    """One block for the end of a run: failure counts per module and what to do."""
    f = metrics.get("failures")
    if not isinstance(f, dict):
        return ""
    mods = [f"{m} {s['failures']}/{s['calls']}" for m, s in f.get("by_module", {}).items() if s.get("failures")]
    cuts = [f"{m} {c['questions']} (max_tokens={c['budget']})" for m, c in (f.get("cut_by_budget") or {}).items()]
    cut_line = f"; replies cut by the configured budget: {', '.join(cuts)}" if cuts else ""
    lost = [f"{m} {s['errored_attempts']}" for m, s in f.get("by_module", {}).items() if s.get("errored_attempts")]
    if lost:  # e.g. requests queued past llm.timeout_s on a busy local server: work the server may have done, redone
        cut_line += (f"; attempts without a reply, retried: {', '.join(lost)} (timeouts or HTTP errors: see "
                     "llm.timeout_s and llm.concurrency)")
    if not mods and not f.get("failed_questions") and not f.get("failed_chunks"):
        return f"{label}: no failures ({f.get('llm_requests', 0)} LLM requests){cut_line}"
    lines = [f"{label}: LLM request failures per module: {', '.join(mods) or 'none'}; "
             f"failed questions {f.get('failed_questions', 0)}/{f.get('questions', 0)}; "
             f"failed chunks {f.get('failed_chunks', 0)}/{f.get('chunks', 0)}{cut_line}"]
    if metrics.get("status") == FAILED:
        lines.append(f"  FAILED ({'; '.join(f.get('exceeded', []))}; max_failure_rate={f.get('threshold')}): the run "
                     "is not marked finished. The errors of each failed question are in predictions.jsonl (a "
                     "server down or not serving this model, a reply cut at max_tokens, ...). Fix the cause and "
                     "re-run the same command: only the failed items are retried, cached successes are kept.")
    return "\n".join(lines)


def raise_if_failed(rows: list[tuple[str, dict[str, Any]]]) -> None:
    """Raise ``RunFailed`` naming every row whose run failed (after the table was printed)."""
    bad = [(label, m) for label, m in rows if m.get("status") == FAILED]
    if bad:
        raise RunFailed("; ".join(f"{label}: {', '.join(m['failures']['exceeded'])} "
                                  f"({m.get('run_name', '?')})" for label, m in bad)
                        + " — re-run the same command to retry the failed items")


def run_is_finished(metrics: dict[str, Any]) -> bool:
    """Whether a run's metrics.json marks it finished. Runs written before the ``status`` field
    count as finished only when no LLM request of theirs failed."""
    status = metrics.get("status")
    if status is not None:
        return status == FINISHED
    modules = (metrics.get("cost") or {}).get("modules") or {}
    return not any(int(s.get("failures", 0) or 0) for s in modules.values() if isinstance(s, dict))


def error_rate(metrics: dict[str, Any]) -> float | None:
    """Failed LLM requests / LLM requests of a run (0-1); computed from ``cost`` for older runs."""
    if isinstance(metrics.get("error_rate"), (int, float)):
        return float(metrics["error_rate"])
    modules = (metrics.get("cost") or {}).get("modules") or {}
    calls = sum(int(s.get("calls", 0) or 0) for s in modules.values() if isinstance(s, dict))
    fails = sum(int(s.get("failures", 0) or 0) for s in modules.values() if isinstance(s, dict))
    return fails / calls if calls else (0.0 if modules else None)


def index_failure_error(failed: int, total: int, reasons: list[str]) -> str:
    """The message for an index in which every chunk failed (nothing to save)."""
    first = f" First error: {reasons[0]}" if reasons else ""
    return (f"all {total} chunks failed to atomize ({failed} failures), so there is nothing to index; "
            f"is the LLM reachable and serving the configured model?{first}")


ERROR_COLUMN = "llm_error_rate"
FAILED_Q_COLUMN = "failed_question_rate"
