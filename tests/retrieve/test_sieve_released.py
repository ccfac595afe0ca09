"""sieve.sieve_prompt=released: the released filter's prompt, reply format, order and fallback.

Uses the real checkout (``tests/prompts/released_checkout.py``); skips only where none exists.
"""
from __future__ import annotations

import json

import pytest

from atomicrag.core.config import FidelityConfig, SieveConfig
from atomicrag.core.schemas import ScoredAtom
from atomicrag.llm.protocol import ChatResult
from atomicrag.prompts import released_sieve
from atomicrag.retrieve.sieve import LLMSieve, sieve_summary
from tests.prompts.released_checkout import require_checkout


def atom(aid: str, score: float) -> ScoredAtom:
    return ScoredAtom(atom_id=aid, text=f"text of {aid}", score=score, passage_id="p")


class Replies:
    model = "scripted"

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.requests = []

    def chat(self, requests):
        self.requests.extend(requests)
        return [ChatResult(text=self.texts.pop(0)) for _ in requests]


def section(ids) -> str:
    return f"[[ ## kept_fragment_ids ## ]]\n{json.dumps({'keep_indices': ids})}\n\n[[ ## completed ## ]]"


def run(sieve_prompt: str, *replies: str):
    llm = Replies(*replies)
    atoms = [atom("a", 0.9), atom("b", 0.8), atom("c", 0.7)]
    [res] = LLMSieve(llm, SieveConfig(name="llm", sieve_target="sub_query", sieve_prompt=sieve_prompt), fidelity()
                     ).sieve(["Q?"], [["Q?"]], [[atoms]])
    return llm, res


def fidelity() -> FidelityConfig:
    return FidelityConfig(prompts="released", released_code=str(require_checkout()))


def test_released_sieve_sends_the_checkout_prompt_free_text_with_its_budget() -> None:
    llm, res = run("released", section([2, 0]))
    [req] = llm.requests
    assert req.schema is None and req.max_tokens == 1024
    assert [m["role"] for m in req.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    last = req.messages[-1]["content"]
    assert "[[ ## question ## ]]\nQ?" in last
    assert json.dumps({"fragments": [{"id": i, "text": f"text of {x}"} for i, x in enumerate("abc")]}) in last
    # the model's order is kept
    assert [a.atom_id for a in res.kept] == ["c", "a"] and not res.failed


def test_own_sieve_sorts_ids_and_uses_the_schema() -> None:
    """The other value keeps the paper behaviour: our prompt, a JSON schema, candidate order."""
    llm = Replies()
    llm.chat = lambda reqs: (llm.requests.extend(reqs), [ChatResult(parsed={"keep_indices": [2, 0]})])[1]
    atoms = [atom("a", 0.9), atom("b", 0.8), atom("c", 0.7)]
    [res] = LLMSieve(llm, SieveConfig(name="llm", sieve_target="sub_query", sieve_prompt="own"), fidelity()).sieve(["Q?"], [["Q?"]], [[atoms]])
    assert llm.requests[0].schema is not None and llm.requests[0].max_tokens == SieveConfig.max_tokens
    assert [a.atom_id for a in res.kept] == ["a", "c"]


@pytest.mark.parametrize("reply,why", [
    ("I keep 0 and 2.", "no kept_fragment_ids section"),
    ("[[ ## kept_fragment_ids ## ]] {\"keep_indices\": [1]}", "unreadable"),  # same-line value is lost
    ("[[ ## kept_fragment_ids ## ]]\n{\"keep_indices\": [1.5]}", "unreadable"),
    ("[[ ## kept_fragment_ids ## ]]\n[1, 2]", "unreadable"),
])
def test_unreadable_replies_keep_everything_and_are_counted(reply: str, why: str) -> None:
    _, res = run("released", reply)
    assert [a.atom_id for a in res.kept] == ["a", "b", "c"]
    assert res.failed and why in res.decisions[0].error
    assert sieve_summary([res])["failed_prompts"] == 1


def test_released_reading_of_ids() -> None:
    """Python literals, lax integers, repeats and out-of-range ids as the released parser reads them;
    an empty list is an empty context, not a fallback."""
    read = released_sieve.parse_reply("[[ ## kept_fragment_ids ## ]]\n{'keep_indices': ['2', 1.0, 2, 7, -1]}", 3)
    assert read.keep == [2, 1] and read.invalid == [7, -1] and read.fallback is None
    _, res = run("released", section([]))
    assert res.kept == [] and not res.failed


def test_the_prompt_is_read_from_the_checkout(tmp_path) -> None:
    """A checkout whose filter lacks the pieces fails loudly, naming the file."""
    root = tmp_path / "AtomicRAG" / "atomicrag"
    root.mkdir(parents=True)
    (root / "fragment_filter.py").write_text("class FragmentFilter:\n    pass\n")
    with pytest.raises(released_sieve.ReleasedParseError, match="fragment_filter.py"):
        released_sieve.load(str(tmp_path / "AtomicRAG"))
    real = released_sieve.load(str(require_checkout()))
    assert real.max_tokens == 1024 and len(real.examples) == 2
