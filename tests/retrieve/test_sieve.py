import json

import pytest

from atomicrag.core.config import FidelityConfig, SieveConfig
from atomicrag.core.schemas import ScoredAtom
from atomicrag.llm.protocol import ChatResult
from atomicrag.prompts.sieve import parse_keep_indices
from atomicrag.retrieve.sieve import LLMSieve, NoSieve, build_sieve, merge_candidates, sieve_summary

FID = FidelityConfig()
PAPER = SieveConfig(name="llm", sieve_target="original_question")
CODE = SieveConfig(name="llm", sieve_target="sub_query")
CFG = PAPER


def atom(aid, score, pid="p"):
    return ScoredAtom(atom_id=aid, text=f"text of {aid}", score=score, passage_id=pid)


class ScriptedLLM:
    """Replies by the judged question; records the fragments each prompt showed."""

    model = "scripted"

    def __init__(self, replies):
        self.replies = replies
        self.batches = []
        self.shown = {}

    def chat(self, requests):
        self.batches.append(list(requests))
        out = []
        for r in requests:
            question, fragments = r.messages[-1]["content"].split("\n\nFragments:\n")
            question = question.removeprefix("Question: ")
            self.shown[question] = [f["text"] for f in json.loads(fragments)["fragments"]]
            out.append(self.replies[question])
        return out


def keep(*ids):
    return ChatResult(parsed={"keep_indices": list(ids)}, prompt_tokens=5)


def test_original_question_target_merges_then_judges_once():
    cands = [[atom("a1", 0.9), atom("a2", 0.2)], [atom("a2", 0.8), atom("a3", 0.1)]]
    llm = ScriptedLLM({"Q": keep(0, 2, 7)})
    [res] = LLMSieve(llm, PAPER, FID).sieve(["Q"], [["Q", "sub"]], [cands])
    # one prompt, judged against the original; a2 appears once, with its best score
    assert llm.shown == {"Q": ["text of a1", "text of a2", "text of a3"]}
    [d] = res.decisions
    assert d.query_index is None and d.target == "Q"
    assert d.kept_ids == ["a1", "a3"] and d.dropped_ids == ["a2"]
    assert d.invalid_indices == [7] and res.n_invalid == 1  # out-of-range id dropped, counted
    assert [a.atom_id for a in res.kept] == ["a1", "a3"] and not res.failed


def test_sub_query_target_judges_each_query_before_merging():
    cands = [[atom("a1", 0.9), atom("a2", 0.2)], [atom("a2", 0.8), atom("a3", 0.1)]]
    llm = ScriptedLLM({"Q": keep(1), "sub": keep(0, 1)})
    [res] = LLMSieve(llm, CODE, FID).sieve(["Q"], [["Q", "sub"]], [cands])
    assert llm.shown == {"Q": ["text of a1", "text of a2"], "sub": ["text of a2", "text of a3"]}
    assert [(d.target, d.query_index, d.kept_ids) for d in res.decisions] == [
        ("Q", 0, ["a2"]), ("sub", 1, ["a2", "a3"])]
    assert [a.atom_id for a in res.kept] == ["a2", "a2", "a3"]  # merge deduplicates later


@pytest.mark.parametrize("bad", [ChatResult(error="timeout"), ChatResult(parsed={"keep": [1]}),
                                 ChatResult(parsed=None)])
def test_failure_keeps_all_candidates_and_is_counted(bad):
    cands = [[atom("a1", 0.9), atom("a2", 0.5)]]
    llm = ScriptedLLM({"Q": bad, "R": keep(0)})
    res = LLMSieve(llm, PAPER, FID).sieve(["Q", "R"], [["Q"], ["R"]], [cands, [[atom("b1", 1.0)]]])
    assert [a.atom_id for a in res[0].kept] == ["a1", "a2"]
    assert res[0].failed and res[0].decisions[0].error
    assert not res[1].failed
    assert len(llm.batches) == 1 and len(llm.batches[0]) == 2  # all questions in one call
    assert all(r.module == "sieve" and r.schema is not None for r in llm.batches[0])
    assert sieve_summary(res)["failed_prompts"] == 1


def test_empty_candidates_need_no_call():
    llm = ScriptedLLM({})
    [res] = LLMSieve(llm, CODE, FID).sieve(["Q"], [["Q", "s"]], [[[], []]])
    assert llm.batches == [] and res.kept == [] and len(res.decisions) == 2


def test_parse_keep_indices():
    valid, invalid = parse_keep_indices({"keep_indices": ["1", 2.0, True, -1, "x", 3, 1]}, 3)
    assert valid == [1, 2] and invalid == [True, -1, "x", 3]
    assert parse_keep_indices({"keep_indices": []}, 3) == ([], [])
    with pytest.raises(TypeError):
        parse_keep_indices({"keep_indices": "0,1"}, 3)


def test_merge_candidates_and_no_sieve():
    merged = merge_candidates([[atom("a", 0.1), atom("b", 0.5)], [atom("a", 0.9)]])
    assert [(a.atom_id, a.score) for a in merged] == [("a", 0.9), ("b", 0.5)]
    [res] = NoSieve().sieve(["Q"], [["Q", "s"]], [[[atom("a", 1.0)], [atom("a", 0.5)]]])
    assert [a.atom_id for a in res.kept] == ["a", "a"] and res.decisions == []
    assert isinstance(build_sieve(SieveConfig(name="none"), FID), NoSieve)
    with pytest.raises(ValueError):
        build_sieve(CFG, FID, None)
    with pytest.raises(ValueError):
        NoSieve().sieve(["Q"], [["Q", "s"]], [[[]]])  # one candidate list per query


def test_with_fake_llm():
    fake = pytest.importorskip("atomicrag.llm.fake")
    cands = [[atom(f"a{i}", 1.0 - i / 10) for i in range(4)]]
    [res] = LLMSieve(fake.FakeLLM(), PAPER, FID).sieve(["Q?"], [["Q?"]], [cands])
    d = res.decisions[0]
    assert set(d.kept_ids) | set(d.dropped_ids) == {a.atom_id for a in cands[0]}
    assert not d.failed or d.kept_ids == [a.atom_id for a in cands[0]]
