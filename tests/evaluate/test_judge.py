from types import SimpleNamespace

import pytest
import torch

from atomicrag.core.config import JudgeConfig
from atomicrag.evaluate.judge import (
    AnswerAccuracyJudge,
    answer_accuracy,
    build_judge,
    factual_correctness,
    judge_summary,
    similarity_score,
)
from atomicrag.llm.protocol import ChatResult

PAPER = JudgeConfig(name="llm")  # w=0.7, raw cosine
CODE = JudgeConfig(name="llm", acc_weight=0.75, acc_similarity="rescaled")


class ScriptedLLM:
    """Answers each request with ``responder(request)``; records every chat() batch."""

    model = "scripted"

    def __init__(self, responder):
        self.responder = responder
        self.batches = []

    def chat(self, requests):
        self.batches.append(list(requests))
        return [self.responder(r) for r in requests]


class TableEmbedder:
    name, dim = "table", 2

    def __init__(self, table):
        self.table = table
        self.calls = 0

    def encode(self, texts, *, is_query=False):
        self.calls += 1
        return torch.tensor([self.table[t] for t in texts], dtype=torch.float32)


# Statements per text, and a fixed classification: TP=3, FP=1, FN=2 -> FC = 6/9.
STATEMENTS = {
    "ANSWER": ["a1", "a2", "a3", "a4"],
    "REFERENCE": ["r1", "r2", "r3", "r4", "r5"],
    "NOTHING": [],
}


def responder(request):
    content = request.messages[-1]["content"]
    assert request.temperature == 0.0 and request.module == "judge"
    if "Answer statements:" in content:
        item = {"statement": "s", "reason": "r"}
        return ChatResult(parsed={"TP": [item] * 3, "FP": [item], "FN": [item] * 2})
    text = content.rsplit("Text: ", 1)[1]
    if text == "BROKEN":
        return ChatResult(error="server said no")
    return ChatResult(parsed={"statements": STATEMENTS[text]}, prompt_tokens=10, completion_tokens=2)


# answer [1, 0] vs reference [0.6, 0.8]: cosine 0.6 (vectors deliberately not both unit length)
EMB = TableEmbedder({"ANSWER": [2.0, 0.0], "REFERENCE": [0.6, 0.8]})


def test_formula_pieces():
    assert factual_correctness(3, 1, 2) == pytest.approx(6 / 9)
    assert factual_correctness(0, 0, 0) == 0.0
    assert similarity_score(-0.6, "cosine") == -0.6
    assert similarity_score(-0.6, "rescaled") == pytest.approx(0.2)
    assert answer_accuracy(1.0, 0.0, 0.7) == pytest.approx(0.7)


@pytest.mark.parametrize(
    "fidelity, ss, acc",
    [
        (PAPER, 0.6, 0.7 * 6 / 9 + 0.3 * 0.6),  # = 0.646667
        (CODE, 0.8, 0.75 * 6 / 9 + 0.25 * 0.8),  # = 0.7
    ],
)
def test_acc_both_fidelity_settings(fidelity, ss, acc):
    llm = ScriptedLLM(responder)
    judge = AnswerAccuracyJudge(llm, EMB, fidelity)
    [v] = judge.judge(["q?"], ["ANSWER"], ["REFERENCE"])
    assert v.status == "scored"
    assert (v.tp, v.fp, v.fn) == (3, 1, 2)
    assert v.fc == pytest.approx(6 / 9)
    assert v.cosine == pytest.approx(0.6)
    assert v.ss == pytest.approx(ss)
    assert v.acc == pytest.approx(acc)
    assert v.answer_statements == STATEMENTS["ANSWER"]
    assert v.prompt_tokens == 20  # the two statement calls


def test_skip_rules_failures_and_batching():
    llm = ScriptedLLM(responder)
    emb = TableEmbedder(EMB.table)
    judge = AnswerAccuracyJudge(llm, emb, CODE)
    answers = ["ANSWER", "", "NOTHING", "ANSWER", "NOTHING", "BROKEN", "ANSWER"]
    references = ["REFERENCE", "REFERENCE", "REFERENCE", "", "NOTHING", "REFERENCE", "NOTHING"]
    verdicts = judge.judge(["q"] * len(answers), answers, references)
    statuses = [v.status for v in verdicts]
    assert statuses == [
        "scored",
        "empty_answer",  # blank answer -> 0
        "empty_answer",  # answer with no statement -> 0
        "skipped_empty_reference",  # blank reference
        "skipped_both_empty",
        "failed",  # statement call failed: counted, not scored 0
        "skipped_empty_reference",  # reference with no statement
    ]
    assert [v.acc for v in verdicts][1:] == [0.0, 0.0, None, None, None, None]
    assert verdicts[5].errors and "server said no" in verdicts[5].errors[0]
    # one batch of statement calls (blank texts need none), one batch of classifications
    assert len(llm.batches) == 2
    assert len(llm.batches[0]) == 2 * len(answers) - 2
    assert len(llm.batches[1]) == 1
    assert emb.calls == 1
    s = judge_summary(verdicts)
    assert s["failed"] == 1 and s["skipped_both_empty"] == 1 and s["skipped_empty_reference"] == 2
    assert s["acc"] == pytest.approx((0.7 + 0.0 + 0.0) / 3)


def test_malformed_classification_is_a_failure():
    def bad_classifier(request):
        if "Answer statements:" in request.messages[-1]["content"]:
            return ChatResult(parsed={"TP": "three"})
        return responder(request)

    [v] = AnswerAccuracyJudge(ScriptedLLM(bad_classifier), EMB, PAPER).judge(["q"], ["ANSWER"], ["REFERENCE"])
    assert v.status == "failed" and v.acc is None and "classification" in v.errors[0]


def test_build_judge():
    assert build_judge(None, None, JudgeConfig(name="none")) is None
    assert isinstance(build_judge(ScriptedLLM(responder), EMB, PAPER), AnswerAccuracyJudge)
    with pytest.raises(ValueError):
        build_judge(None, EMB, PAPER)


def test_with_fake_llm():
    fake = pytest.importorskip("atomicrag.llm.fake")
    emb = TableEmbedder({"an answer": [1.0, 0.0], "a reference": [1.0, 1.0]})
    judge = AnswerAccuracyJudge(fake.FakeLLM(), emb, CODE)
    [v] = judge.judge(["What?"], ["an answer"], ["a reference"])
    assert v.status in ("scored", "empty_answer", "skipped_both_empty", "skipped_empty_reference")
    if v.status == "scored":
        assert 0.0 <= v.acc <= 1.0


def test_failed_judge_calls_score_zero_under_the_released_code():
    zero = JudgeConfig(name="llm", acc_weight=0.75, acc_similarity="rescaled", judge_failures="zero")
    answers, refs = ["ANSWER", "BROKEN"], ["REFERENCE", "REFERENCE"]
    excluded = AnswerAccuracyJudge(ScriptedLLM(responder), EMB, CODE).judge(["q", "q"], answers, refs)
    zeroed = AnswerAccuracyJudge(ScriptedLLM(responder), EMB, zero).judge(["q", "q"], answers, refs)
    assert excluded[1].acc is None and zeroed[1].acc == 0.0
    assert excluded[1].status == zeroed[1].status == "failed"  # counted both ways
    assert judge_summary(excluded)["acc"] == pytest.approx(excluded[0].acc)
    assert judge_summary(zeroed)["acc"] == pytest.approx(zeroed[0].acc / 2)
    assert judge_summary(zeroed)["failed"] == judge_summary(excluded)["failed"] == 1


def test_judge_has_its_own_llm_and_embedder(monkeypatch):
    """The judge is built from cfg.judge: the run's models only when the config says so."""
    import dataclasses

    from atomicrag.core.config import EmbedderConfig, FidelityConfig
    from atomicrag.evaluate import judge_config
    from atomicrag.harness.config import HarnessConfig

    built = {}

    class Closable(ScriptedLLM):
        closed = False

        def close(self):
            self.closed = True

    def fake_build_llm(cfg, paths, accountant=None, accept_empty=False):
        built["llm"] = cfg
        return Closable(responder)

    def fake_build_embedder(cfg, fidelity=None):
        built["embedder"], built["fidelity"] = cfg, fidelity
        return TableEmbedder(EMB.table)

    monkeypatch.setattr("atomicrag.llm.factory.build_llm", fake_build_llm)
    monkeypatch.setattr("atomicrag.embed.factory.build_embedder", fake_build_embedder)
    run_llm, run_emb = ScriptedLLM(responder), TableEmbedder(EMB.table)
    from atomicrag.core.compose import group_config

    released_judge = dataclasses.replace(group_config("judge", "llm"), acc_weight=0.75, acc_similarity="rescaled")
    # conf/judge/llm.yaml: the released judge; the run's embedder mean-pools as the released retrieval does
    cfg = HarnessConfig(judge=released_judge, fidelity=FidelityConfig(preset="reference_code"),
                        embedder=EmbedderConfig(model="BAAI/bge-large-en-v1.5", embed_pooling="mean"))
    j = judge_config.judge_from_config(cfg, run_llm, run_emb)
    assert built["llm"].model == "gpt-4o-mini" and built["llm"].seed == 42 and j.llm is not run_llm
    assert built["embedder"].model == "BAAI/bge-large-en-v1.5" and built["embedder"].pooling == "cls"
    # the retrieval switches (mean pooling) do not reach the judge's own embedder
    assert built["embedder"].embed_pooling == "model" and built["fidelity"] is None
    assert (j.settings["acc_weight"], j.settings["acc_similarity"]) == (0.75, "rescaled")
    [v] = j.judge(["q"], ["ANSWER"], ["REFERENCE"])
    assert v.status == "scored" and j.settings["llm"] == "gpt-4o-mini"
    owned = j.llm
    j.close()
    assert owned.closed
    # the run's models, when asked for
    cfg = HarnessConfig(judge=JudgeConfig(name="llm", llm_source="run", embedder_source="run", embed_as_query=False))
    j = judge_config.judge_from_config(cfg, run_llm, run_emb)
    assert j.llm is run_llm and j.judge_impl.embedder is run_emb
    j.close()  # does not close the run's LLM
    assert judge_config.judge_from_config(HarnessConfig(), run_llm, run_emb) is None


def test_judge_embeds_answer_and_reference_as_queries():
    from atomicrag.evaluate.judge_config import _QueryEncoder

    class Recording(TableEmbedder):
        def encode(self, texts, *, is_query=False):
            self.is_query = is_query
            return super().encode(texts)

    inner = Recording(EMB.table)
    AnswerAccuracyJudge(ScriptedLLM(responder), _QueryEncoder(inner), CODE).judge(["q"], ["ANSWER"], ["REFERENCE"])
    assert inner.is_query is True  # LangChain's aembed_query: bge's query instruction on both texts


def test_a_registered_judge_is_built_through_the_registry(monkeypatch):
    # a plug-in judge registered by name is accepted by the config and built with what it declares
    from atomicrag.core import registry
    from atomicrag.evaluate import judge_config
    from atomicrag.harness.config import HarnessConfig

    for attr in ("_paths", "_needs", "_loaded"):  # the entry is gone after the test
        monkeypatch.setattr(registry.JUDGES, attr, dict(getattr(registry.JUDGES, attr)))
    built = {}

    def my_judge(llm, embedder, cfg, fidelity, **kwargs):
        built.update(llm=llm, embedder=embedder, seed=kwargs["seed"])
        return AnswerAccuracyJudge(llm, EMB, cfg, fidelity)

    registry.JUDGES.register("mine", my_judge, needs={"llm"})
    run_llm = ScriptedLLM(responder)
    cfg = HarnessConfig(judge=JudgeConfig(name="mine", llm_source="run", acc_weight=0.75))
    j = judge_config.judge_from_config(cfg, run_llm, EMB)
    assert built == {"llm": run_llm, "embedder": None, "seed": cfg.llm.seed}  # no embedder: not declared
    assert j.judge_impl.llm is run_llm
    with pytest.raises(ValueError, match="known: llm, mine, none"):
        build_judge(run_llm, EMB, SimpleNamespace(name="other", acc_weight=0.7))  # past JudgeConfig's own check


def test_the_released_judge_sends_its_seed_though_the_released_pipeline_sends_none():
    """The released evaluation sets seed 42 on its ChatOpenAI while the released pipeline's LLM class
    sends none: under ``fidelity=reference_code`` (request_seed=none, judge_replies=released) the
    judge still sends its seed (it sent none before, so its requests differed from the released
    judge's); with structured judge replies the pipeline's seed switch still applies."""
    import dataclasses

    from atomicrag.evaluate import judge_config
    from atomicrag.harness.config import HarnessConfig
    from atomicrag.harness.differences import released_config

    ref = released_config()  # the harness's config under fidelity=reference_code
    assert ref.fidelity.request_seed == "none" and ref.judge.judge_replies == "released"
    run_llm = ScriptedLLM(responder)
    jc = dataclasses.replace(ref.judge, name="llm", llm_source="run", embedder_source="run")
    cfg = HarnessConfig(judge=jc, fidelity=ref.fidelity)
    assert judge_config.judge_from_config(cfg, run_llm, EMB).judge_impl.seed == cfg.llm.seed
    structured = HarnessConfig(judge=dataclasses.replace(jc, judge_replies="structured"), fidelity=ref.fidelity)
    assert judge_config.judge_from_config(structured, run_llm, EMB).judge_impl.seed is None
