"""Issue 19, item 2: budgets as released; a reply cut by our budget is reported apart from failures."""
from __future__ import annotations

from pathlib import Path

import yaml

from atomicrag.engine.failures import summarize_run
from atomicrag.llm.accounting import Accountant
from atomicrag.llm.protocol import ChatResult

ROOT = Path(__file__).resolve().parent.parent


def test_cut_replies_are_counted_apart_from_llm_failures():
    acc = Accountant()
    acc.record("answer", [ChatResult(text="Thought: long", finish_reason="length"),
                          ChatResult(text="Answer: x", finish_reason="stop"),
                          ChatResult(error="HTTP 500")])
    acc.record("decompose", [ChatResult(text='{"needs_dec', finish_reason="length", error="unreadable (reply truncated at max_tokens)")])
    mods = acc.to_dict()["modules"]
    assert (mods["answer"]["failures"], mods["answer"]["cut"]) == (1, 1)
    assert (mods["decompose"]["failures"], mods["decompose"]["cut"]) == (0, 1)
    preds = [{"question_id": "q1", "cut": {"answer": 160}, "errors": []},
             {"question_id": "q2", "cut": {"decompose": 256, "answer": 160}, "errors": []},
             {"question_id": "q3", "errors": []}]
    out = summarize_run(0.0, {"answer": {"calls": 3, "failures": 0}}, preds)
    f = out["failures"]
    assert out["status"] == "finished" and f["failed_questions"] == 0  # cuts do not fail the run
    assert f["cut_by_budget"]["answer"] == {"questions": 2, "question_ids": ["q1", "q2"], "budget": 160}
    assert f["cut_by_budget"]["decompose"]["budget"] == 256


def test_published_rows_get_the_released_budget():
    paper = yaml.safe_load((ROOT / "conf/preset/paper.yaml").read_text())
    assert paper["reader"]["max_tokens"] == 2048 and paper["decompose"]["max_tokens"] == 2048


def test_a_cut_decomposition_is_not_a_failed_step():
    from atomicrag.core.config_query import DecomposeConfig, FidelityConfig
    from atomicrag.engine.failures import question_failures
    from atomicrag.retrieve.decompose import LLMDecomposer

    class Cut:
        def chat(self, reqs):
            return [ChatResult(text='{"needs_decomposition": tr', finish_reason="length",
                               error="unreadable reply (reply truncated at max_tokens)") for _ in reqs]

    [d] = LLMDecomposer(Cut(), DecomposeConfig(name="llm"), FidelityConfig(), max_tokens=64).decompose(["Who?"])
    assert not d.failed and d.cut_at == 64 and d.queries == ["Who?"]
    assert question_failures({"decomposition": d.to_dict()}) == []
