"""The run plan's measured sizes (``harness/plan_record.py``) are what their committed records hold:
each constant is derived again from the record it names, so a record re-made (or one that is
removed) and its constant change together."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atomicrag.harness import plan_record

ROOT = Path(__file__).resolve().parent.parent


def _metrics(record: str) -> dict[str, Any]:
    return json.loads((ROOT / record / "metrics.json").read_text())


def test_reply_lengths_are_the_records_tokens_per_question() -> None:
    m = _metrics(plan_record.REPLY_RECORD)
    modules, n = m["cost"]["modules"], m["n_questions"]
    for stage, module in (("decompose", "decompose"), ("sieve", "sieve"), ("reader", "answer")):
        assert plan_record.EXPECTED_REPLY[stage] == round(modules[module]["completion_tokens"] / n), stage


def test_sieve_and_graph_sizes_are_the_records() -> None:
    m = _metrics(plan_record.SIZES_RECORD)
    sieve, graph, n = m["stages"]["sieve"], m["graph_stats"], m["n_questions"]
    assert m["config"]["decompose"] == "llm" and m["config"]["sieve"] == "llm"  # what the factor assumes
    top_k = m["config"]["top_k"]
    assert plan_record.DECOMPOSED_CANDIDATE_FACTOR == round(sieve["candidates"] / n / top_k, 2)
    assert plan_record.SIEVE_KEPT_PER_QUESTION == round(sieve["kept"] / n, 2)
    assert plan_record.ENTITIES_PER_ATOM == round(graph["entities"] / graph["atoms"], 1)
    assert plan_record.EDGES_PER_NODE == round(graph["edges"] / graph["nodes"], 1)
