"""reader.answer_extraction: the reader's answer read the released way vs this project's way."""
from __future__ import annotations

from atomicrag.answer.readers import LLMReader
from atomicrag.core.config import ReaderConfig
from atomicrag.llm.protocol import ChatResult


class Reply:
    model = "scripted"

    def __init__(self, text: str, finish_reason: str | None = None) -> None:
        self.result = ChatResult(text=text, finish_reason=finish_reason)
        self.calls = 0

    def chat(self, requests):
        self.calls += len(requests)
        return [self.result for _ in requests]


def answer(text: str, extraction: str, finish_reason: str | None = None) -> tuple[str, int]:
    llm = Reply(text, finish_reason)
    reader = LLMReader(llm, "precise", ReaderConfig(answer_followup="ask", answer_extraction=extraction))
    [out] = reader.answer(["Q?"], [["ctx"]])
    return out.answer, llm.calls


def test_released_takes_the_text_between_the_first_and_second_marker() -> None:
    text = "Thought: a. Answer: Paris [1].\nMore. Answer: Lyon"
    assert answer(text, "released") == ("Paris [1].\nMore.", 1)
    assert answer(text, "own") == ("Lyon", 1)  # ours: after the last marker, cleaned


def test_released_takes_the_whole_reply_without_a_marker_and_asks_nothing_more() -> None:
    text = "  The capital is Paris.\n"
    assert answer(text, "released") == (text, 1)  # as it came: no strip, no follow-up call
    _, calls = answer(text, "own")
    assert calls == 2  # ours asks for the span


def test_released_reads_a_cut_reply_the_same_way() -> None:
    assert answer("Thought: long", "released", "length") == ("Thought: long", 1)
    assert answer("Thought: long", "own", "length") == ("", 1)


def test_released_budgets_send_no_cap() -> None:
    """fidelity.budgets=released: the reader sends max_tokens=None; own: reader.max_tokens."""
    for uncapped, expected in ((True, None), (False, ReaderConfig().max_tokens)):
        reader = LLMReader(Reply("Answer: x"), "precise", ReaderConfig(), uncapped=uncapped)
        [req] = reader.requests(["Q?"], [["ctx"]])
        assert req.max_tokens == expected
