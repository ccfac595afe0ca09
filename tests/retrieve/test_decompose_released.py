"""decompose.decompose_parse: the decomposition reply read the released way vs this project's way."""
from __future__ import annotations

import dataclasses
import json

from atomicrag.core.config import DecomposeConfig, FidelityConfig
from atomicrag.llm.protocol import ChatResult
from atomicrag.retrieve.decompose import LLMDecomposer

CFG = DecomposeConfig(name="llm", complexity_threshold=6.5, max_sub_questions=3)
SUBS = ["", "Who wrote X?", "Who wrote X?", "Where was Y born?"]
BODY = {"needs_decomposition": True, "complexity_score": 8, "reasoning": "two hops",
        "sub_questions": [{"id": i + 1, "question": q, "focus": "entity"} for i, q in enumerate(SUBS)]}


class Reply:
    model = "scripted"

    def __init__(self, result: ChatResult) -> None:
        self.result = result
        self.requests = []

    def chat(self, requests):
        self.requests.extend(requests)
        return [self.result for _ in requests]


def decompose(mode: str, result: ChatResult):
    llm = Reply(result)
    cfg = dataclasses.replace(CFG, decompose_trigger="score_and_flag", decompose_parse=mode)
    [out] = LLMDecomposer(llm, cfg, FidelityConfig()).decompose(["Q?"])
    return llm.requests[0], out


def test_released_caps_first_and_keeps_empty_and_repeated_sub_questions() -> None:
    text = "Here you go:\n```json\n" + json.dumps(BODY) + "\n```"
    req, out = decompose("released", ChatResult(text=text))
    assert req.schema is None  # free text, read with the released fallbacks (a fenced block here)
    assert out.queries == ["Q?", "", "Who wrote X?", "Who wrote X?"] and not out.failed


def test_own_drops_empty_and_repeated_then_caps() -> None:
    req, out = decompose("own", ChatResult(text=json.dumps(BODY), parsed=BODY))
    assert req.schema is not None
    assert out.queries == ["Q?", "Who wrote X?", "Where was Y born?"]


def test_released_unreadable_reply_stays_undecomposed_and_is_counted() -> None:
    _, out = decompose("released", ChatResult(text="I think it needs two steps."))
    assert out.queries == ["Q?"] and out.failed and "unreadable" in out.error


def test_released_budgets_send_no_cap() -> None:
    for budgets, expected in (("released", None), ("own", 77)):
        llm = Reply(ChatResult(text="{}"))
        fid = FidelityConfig(budgets=budgets)
        LLMDecomposer(llm, dataclasses.replace(CFG, decompose_trigger="score_and_flag"), fid, max_tokens=77).decompose(["Q?"])
        assert llm.requests[0].max_tokens == expected
