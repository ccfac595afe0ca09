"""The judge as released (issue 19, item 3): its failure rule and the instruction it embeds with."""
from __future__ import annotations

import dataclasses

import pytest

from atomicrag.core.config import JudgeConfig
from atomicrag.evaluate.judge import AnswerAccuracyJudge, answer_accuracy, judge_summary, similarity_score
from atomicrag.llm.protocol import ChatResult
from tests.evaluate.test_judge import EMB, ScriptedLLM, responder

RELEASED = JudgeConfig(name="llm", acc_weight=0.75, acc_similarity="rescaled", judge_failures="released")


def _broken_classification(request):
    if "Answer statements:" in request.messages[-1]["content"]:
        return ChatResult(error="classification reply was not JSON")
    return responder(request)


def test_a_failed_classification_keeps_the_similarity_part():
    """Released: FC = 0 after the retries, and 0.25 x SS is still added (not ACC 0)."""
    [v] = AnswerAccuracyJudge(ScriptedLLM(_broken_classification), EMB, RELEASED).judge(
        ["q"], ["ANSWER"], ["REFERENCE"])
    assert v.status == "failed" and v.errors  # counted as a failure
    assert v.ss is not None and v.ss > 0
    assert v.acc == pytest.approx(answer_accuracy(0.0, v.ss, 0.75)) and v.acc > 0
    zero = dataclasses.replace(RELEASED, judge_failures="zero")
    [z] = AnswerAccuracyJudge(ScriptedLLM(_broken_classification), EMB, zero).judge(["q"], ["ANSWER"], ["REFERENCE"])
    assert z.acc == 0.0
    assert judge_summary([v])["failed"] == 1


def test_failed_statement_splits_follow_the_released_rule():
    """Released: a failed split returns no statements; answer -> ACC 0, reference -> skipped."""
    judge = AnswerAccuracyJudge(ScriptedLLM(responder), EMB, RELEASED)
    broken_answer, broken_reference = judge.judge(["q", "q"], ["BROKEN", "ANSWER"], ["REFERENCE", "BROKEN"])
    assert broken_answer.status == broken_reference.status == "failed"
    assert broken_answer.acc == 0.0 and broken_reference.acc is None


def test_judge_embeds_with_langchains_bge_instruction(monkeypatch):
    """The text that reaches the model starts with LangChain's default English bge instruction,
    the "question" wording that HuggingFaceBgeEmbeddings.aembed_query sends (the released judge)."""
    from atomicrag.core.compose import group_config
    from atomicrag.core.config import JudgeConfig
    from atomicrag.evaluate.judge_config import judge_embedder
    from atomicrag.harness.config import HarnessConfig

    default = group_config("judge", "llm").embedder  # conf/judge/llm.yaml: the released judge's embedder
    # the offline model stands in for bge-large; the instruction is the judge's default, untouched
    cfg = HarnessConfig(judge=JudgeConfig(name="llm", embedder=dataclasses.replace(default, model="minilm", pooling="auto",
                                                                            max_length=128)))
    emb = judge_embedder(cfg, None)
    sent: list[str] = []
    real = emb.embedder.model.encode
    monkeypatch.setattr(emb.embedder.model, "encode", lambda texts, **kw: (sent.extend(texts), real(texts, **kw))[1])
    [v] = AnswerAccuracyJudge(ScriptedLLM(responder), emb, RELEASED).judge(["q"], ["ANSWER"], ["REFERENCE"])
    assert v.status == "scored"
    prefix = "Represent this question for searching relevant passages: "
    # the distinct texts (a reduced-precision batch is filled to its fixed shape with copies)
    assert sorted(set(sent)) == [prefix + "ANSWER", prefix + "REFERENCE"]
    assert similarity_score(v.cosine, "rescaled") == pytest.approx(v.ss)


def test_judge_reference_is_the_single_answer_not_the_aliases():
    from atomicrag.core.schemas import QueryTrace, Question
    from atomicrag.evaluate.score import score_run

    seen = []

    class Recording:
        def judge(self, questions, answers, references):
            seen.extend(references)
            return AnswerAccuracyJudge(ScriptedLLM(responder), EMB, RELEASED).judge(
                questions, ["ANSWER"] * len(answers), ["REFERENCE"] * len(references))

    q = Question(id="q1", question="When?", answers=["June 1982", "1982", "summer 1982"])
    t = QueryTrace(question_id="q1", question="When?", answer="1982")
    _, records = score_run([q], [t], judge=Recording())
    assert seen == ["June 1982"]
    assert records[0]["f1"] == 1.0  # the aliases still count for EM/F1 (best over answers)
