import pytest

from atomicrag.core.config import DecomposeConfig, FidelityConfig
from atomicrag.llm.protocol import ChatResult
from atomicrag.prompts import decompose as prompt
from atomicrag.retrieve.decompose import (
    LLMDecomposer,
    NoDecomposer,
    build_decomposer,
    decompose_summary,
    trigger_fires,
)

FID = FidelityConfig()
PAPER = DecomposeConfig(name="llm", complexity_threshold=6.5, max_sub_questions=3, decompose_trigger="score")
CODE = DecomposeConfig(name="llm", complexity_threshold=6.5, max_sub_questions=3, decompose_trigger="score_and_flag")
CFG = PAPER


class ScriptedLLM:
    model = "scripted"

    def __init__(self, replies):
        self.replies = replies  # question text -> ChatResult
        self.batches = []

    def chat(self, requests):
        self.batches.append(list(requests))
        return [self.replies[r.messages[-1]["content"].rsplit("Question: ", 1)[1]] for r in requests]


def reply(score, needs, n_subs, **kw):
    subs = [{"id": i + 1, "question": f"sub {i + 1}?", "focus": "entity"} for i in range(n_subs)]
    return ChatResult(parsed={"needs_decomposition": needs, "complexity_score": score,
                              "reasoning": "because", "sub_questions": subs}, **kw)


@pytest.mark.parametrize(
    "score, needs, n_subs, paper, code",
    [
        (7.0, True, 2, True, True),
        (7.0, False, 2, True, False),  # the model's flag only matters for the released code
        (6.5, True, 1, True, True),  # the threshold itself triggers (>=)
        (6.4, True, 2, False, False),
        (8.0, True, 0, True, False),  # code also requires a sub-question
    ],
)
def test_trigger_rule(score, needs, n_subs, paper, code):
    assert trigger_fires(score, needs, n_subs, threshold=6.5, rule="score") is paper
    assert trigger_fires(score, needs, n_subs, threshold=6.5, rule="score_and_flag") is code


@pytest.mark.parametrize("fidelity, decomposed", [(PAPER, True), (CODE, False)])
def test_decomposer_applies_trigger_setting(fidelity, decomposed):
    llm = ScriptedLLM({"Q?": reply(7.0, False, 2)})
    [d] = LLMDecomposer(llm, fidelity, FID).decompose(["Q?"])
    assert d.decomposed is decomposed and not d.failed
    assert d.queries == (["Q?", "sub 1?", "sub 2?"] if decomposed else ["Q?"])


def test_batch_cap_and_failures():
    llm = ScriptedLLM({
        "simple?": reply(2.0, False, 0),
        "complex?": reply(9.0, True, 5, prompt_tokens=30, completion_tokens=40),
        "broken?": ChatResult(error="timeout"),
        "garbled?": ChatResult(parsed={"needs_decomposition": True, "sub_questions": []}),
        "paper-only?": reply(8.0, True, 0),
    })
    questions = ["simple?", "complex?", "broken?", "garbled?", "paper-only?"]
    out = LLMDecomposer(llm, PAPER, FID).decompose(questions)
    # one chat() call with one schema'd request per question
    assert len(llm.batches) == 1 and len(llm.batches[0]) == 5
    assert all(r.schema == prompt.SCHEMA and r.module == "decompose" for r in llm.batches[0])
    simple, complex_, broken, garbled, paper_only = out
    assert simple.queries == ["simple?"] and not simple.triggered
    assert complex_.queries == ["complex?", "sub 1?", "sub 2?", "sub 3?"]  # capped to 3
    assert complex_.proposed == 5 and len(complex_.sub_questions) == 3
    assert complex_.prompt_tokens == 30
    assert broken.failed and broken.error == "timeout" and broken.queries == ["broken?"]
    assert garbled.failed and "complexity_score" in garbled.error
    assert paper_only.triggered and not paper_only.decomposed  # nothing to add
    s = decompose_summary(out)
    assert s["failed"] == 2 and s["decomposed"] == 1 and s["capped"] == 1
    assert s["triggered_without_sub_questions"] == 1
    assert complex_.to_dict()["sub_questions"][0] == {"id": 1, "question": "sub 1?", "focus": "entity"}


def test_parse_reply_normalises_sub_questions():
    needs, score, _, subs = prompt.parse_reply({
        "needs_decomposition": True, "complexity_score": 7,
        "reasoning": "r", "sub_questions": [{"question": " a? ", "focus": "odd"}, {"question": ""}, "b?"]})
    assert needs is True and score == 7.0
    assert [s["question"] for s in subs] == ["a?", "b?"]
    assert subs[0]["focus"] == "reasoning"
    with pytest.raises(TypeError):
        prompt.parse_reply(["not", "an", "object"])


def test_prompt_mentions_threshold_and_cap():
    [msg] = prompt.build_messages("Who?", max_sub_questions=3, threshold=6.5)
    assert "6.5" in msg["content"] and "at most 3" in msg["content"]
    assert msg["content"].endswith("Question: Who?")


def test_no_decomposer_and_factory():
    assert NoDecomposer().decompose(["a", "b"])[1].queries == ["b"]
    assert isinstance(build_decomposer(DecomposeConfig(name="none"), FID), NoDecomposer)
    assert isinstance(build_decomposer(CFG, FID, ScriptedLLM({})), LLMDecomposer)
    with pytest.raises(ValueError):
        build_decomposer(CFG, FID, None)


def test_with_fake_llm():
    fake = pytest.importorskip("atomicrag.llm.fake")
    out = LLMDecomposer(fake.FakeLLM(), PAPER, FID).decompose(["Who founded the company that bought X?"])
    assert out[0].queries[0] == "Who founded the company that bought X?"
    assert len(out[0].queries) <= 1 + CFG.max_sub_questions


def test_released_trigger_asks_for_an_independent_flag():
    """Switch #8: under score_and_flag the prompt no longer ties the flag to the score."""
    [paper] = prompt.build_messages("Who?", max_sub_questions=3, threshold=6.5, trigger="score")
    [code] = prompt.build_messages("Who?", max_sub_questions=3, threshold=6.5, trigger="score_and_flag")
    assert "when your score is 6.5 or higher" in paper["content"]
    assert "6.5" not in code["content"] and "independently of the score" in code["content"]
    assert "multi-hop" in code["content"] and "a single fact settles it" in code["content"]
    # the decomposer sends the prompt of its fidelity; the reply's flag then decides under the code
    llm = ScriptedLLM({"Who?": reply(8.0, False, 2)})
    out_code = LLMDecomposer(llm, CODE, FID).decompose(["Who?"])[0]
    assert "independently of the score" in llm.batches[-1][0].messages[-1]["content"]
    out_paper = LLMDecomposer(llm, PAPER, FID).decompose(["Who?"])[0]
    assert "when your score is 6.5" in llm.batches[-1][0].messages[-1]["content"]
    assert (out_code.decomposed, out_paper.decomposed) == (False, True)
    with pytest.raises(ValueError):
        prompt.build_messages("Who?", max_sub_questions=3, threshold=6.5, trigger="always")
