"""judge.judge_replies: the judge's replies read the released way vs with JSON schemas."""
from __future__ import annotations

import json

import torch

from atomicrag.core.config import JudgeConfig
from atomicrag.evaluate.judge import AnswerAccuracyJudge
from atomicrag.evaluate.judge_released import parse_statements_released
from atomicrag.llm.protocol import ChatResult

ITEM = {"statement": "s", "reason": "r"}
GOOD = json.dumps({"TP": [ITEM], "FP": [], "FN": [ITEM]})  # FC = 2/3


class LLM:
    model = "scripted"

    def __init__(self, classify_replies: list[str]) -> None:
        self.classify_replies = classify_replies
        self.requests = []

    def chat(self, requests):
        self.requests.extend(requests)
        out = []
        for r in requests:
            if "Answer statements:" in r.messages[-1]["content"]:
                text = self.classify_replies.pop(0)
                out.append(ChatResult(text=text, parsed=json.loads(GOOD)))
            else:  # a statement split, fenced as small models write it
                out.append(ChatResult(text='```json\n{"statements": ["one"]}\n```', parsed={"statements": ["one"]}))
        return out


class Embedder:
    name, dim = "seen", 2

    def __init__(self) -> None:
        self.texts = []

    def encode(self, texts, *, is_query=False):
        self.texts.extend(texts)
        return torch.tensor([[1.0, 0.0], [0.6, 0.8]], dtype=torch.float32)


def judge(mode: str, classify_replies: list[str]):
    llm, emb = LLM(classify_replies), Embedder()
    fid = JudgeConfig(judge_replies=mode, judge_failures="released", acc_weight=0.75, acc_similarity="rescaled")
    [v] = AnswerAccuracyJudge(llm, emb, fid).judge(["Q?"], ["line one\nline two"], ["ref"])
    return llm, emb, v


def test_released_sends_free_text_uncapped_and_embeds_without_newlines() -> None:
    llm, emb, v = judge("released", [GOOD])
    assert all(r.schema is None and r.max_tokens is None for r in llm.requests)
    assert emb.texts == ["line one line two", "ref"]
    assert v.status == "scored" and abs(v.fc - 2 / 3) < 1e-9


def test_structured_sends_schemas_with_the_budget_and_embeds_as_is() -> None:
    llm, emb, _ = judge("structured", [GOOD])
    assert all(r.schema is not None and r.max_tokens == 1024 for r in llm.requests)
    assert emb.texts == ["line one\nline two", "ref"]


def test_released_classification_is_asked_three_times_then_fc_is_zero() -> None:
    llm, _, v = judge("released", ["not json", "```json\n" + GOOD + "```", GOOD])
    assert sum("Answer statements:" in r.messages[-1]["content"] for r in llm.requests) == 3
    assert v.status == "scored" and abs(v.fc - 2 / 3) < 1e-9  # the third try was read
    llm, _, v = judge("released", ["no", "no", "no"])
    assert v.status == "failed" and v.fc is None
    assert abs(v.acc - 0.25 * (0.6 + 1) / 2) < 1e-6  # released: FC 0, similarity still counts


def test_released_statement_reading() -> None:
    assert parse_statements_released('Sure: {"facts": ["a", 2]} done') == ["['a', 2]"]  # all values
    assert parse_statements_released('["a", "b"]') == ["a", "b"]
    assert parse_statements_released('{"items": ["x"]}') == ["x"]


def test_each_released_classification_try_is_a_new_call_past_the_llm_cache(tmp_path) -> None:
    """The released judge asks its classification again and gets a new reply; behind our LLM cache
    the same request used to come back as the cached copy of the unreadable one (scored as failed)."""
    from atomicrag.llm.cache import CachedLLM

    class Backend(LLM):
        def close(self) -> None:
            return None

    backend = Backend(["not json", GOOD, GOOD])
    cached = CachedLLM(backend, tmp_path / "llm.sqlite", key_model="scripted")
    fid = JudgeConfig(judge_replies="released", judge_failures="released", acc_weight=0.75,
                      acc_similarity="rescaled")
    try:
        [v] = AnswerAccuracyJudge(cached, Embedder(), fid).judge(["Q?"], ["line one"], ["ref"])
    finally:
        cached.close()
    assert sum("Answer statements:" in r.messages[-1]["content"] for r in backend.requests) == 2
    assert v.status == "scored" and abs(v.fc - 2 / 3) < 1e-9


def test_the_released_judge_asks_to_split_an_empty_answer_too() -> None:
    """Released: an empty answer is sent for splitting like any other (a model may write statements
    for it); ours scores it 0 without a call. Found by the scripted parity model."""
    llm, emb = LLM([GOOD]), Embedder()
    fid = JudgeConfig(judge_replies="released", judge_failures="released", acc_weight=0.75, acc_similarity="rescaled")
    [v] = AnswerAccuracyJudge(llm, emb, fid).judge(["Q?"], [""], ["ref"])
    assert sum("Answer statements:" not in r.messages[-1]["content"] for r in llm.requests) == 2
    assert v.status == "scored"  # the model's statements for it were classified
    llm = LLM([])
    [v] = AnswerAccuracyJudge(llm, Embedder(), JudgeConfig()).judge(["Q?"], [""], ["ref"])
    assert v.status == "empty_answer" and len(llm.requests) == 1  # ours: only the reference is split
