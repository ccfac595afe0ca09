"""``sieve.timeout_s``: the released filter keeps every candidate, in candidate order, when a sieve
task has no reply 60 s after it started; ours does the same when asked to, and counts it."""
from __future__ import annotations

import json
import logging

from atomicrag.core.config import FidelityConfig, SieveConfig
from atomicrag.core.schemas import ScoredAtom
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatResult
from atomicrag.retrieve.sieve import LLMSieve, sieve_summary
from tests.llm.llm_stub_server import StubServer, completion
from tests.prompts.released_checkout import require_checkout


def atoms(*ids: str) -> list[ScoredAtom]:
    return [ScoredAtom(atom_id=a, text=f"text of {a}", score=1.0 - k / 10, passage_id="p") for k, a in enumerate(ids)]


def section(ids: list[int]) -> str:
    return f"[[ ## kept_fragment_ids ## ]]\n{json.dumps({'keep_indices': ids})}\n\n[[ ## completed ## ]]"


def released_sieve(llm, timeout_s: float | None) -> LLMSieve:
    cfg = SieveConfig(name="llm", sieve_target="sub_query", sieve_prompt="released", timeout_s=timeout_s)
    return LLMSieve(llm, cfg, FidelityConfig(prompts="released", released_code=str(require_checkout())))


def _stub() -> StubServer:
    stub = StubServer()
    stub.thread.start()
    # the sub-query "Late?" gets its reply after 2 s, the other at once; both would keep one atom
    stub.responder = lambda body, n: (200, completion(section([1])),
                                      2.0 if "Late?" in body["messages"][-1]["content"] else 0.0)
    return stub


def test_a_sieve_reply_after_the_timeout_keeps_every_candidate_and_is_counted() -> None:
    stub = _stub()
    try:
        client = OpenAIClient(stub.base_url, "stub-model", api_key_env="ATOMICRAG_TEST_KEY", max_retries=2)
        [res] = released_sieve(client, 0.5).sieve(["Q?"], [["Q?", "Late?"]], [[atoms("a", "b", "c"), atoms("x", "y", "z")]])
    finally:
        stub.httpd.shutdown()
        stub.httpd.server_close()
    in_time, late = res.decisions
    assert in_time.kept_ids == ["b"] and not in_time.failed
    assert late.kept_ids == ["x", "y", "z"] and late.failed and late.timed_out and "timed out" in late.error
    assert [a.atom_id for a in res.kept] == ["b", "x", "y", "z"]
    summary = sieve_summary([res])
    assert summary["failed_prompts"] == 1 and summary["timed_out_prompts"] == 1
    assert len(stub.bodies) == 2, "the timed-out sieve request was sent again"


def test_without_a_timeout_the_late_reply_is_read() -> None:
    stub = _stub()
    try:
        client = OpenAIClient(stub.base_url, "stub-model", api_key_env="ATOMICRAG_TEST_KEY")
        [res] = released_sieve(client, None).sieve(["Q?"], [["Late?"]], [[atoms("x", "y", "z")]])
    finally:
        stub.httpd.shutdown()
        stub.httpd.server_close()
    assert res.decisions[0].kept_ids == ["y"] and sieve_summary([res])["timed_out_prompts"] == 0


class InProcess:
    """An in-process backend: it cannot cut a generation short."""

    model = "in-process"
    honours_deadline = False

    def chat(self, requests):
        return [ChatResult(text=section([0])) for _ in requests]


def test_a_backend_that_cannot_honour_the_timeout_is_named_in_a_warning(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="atomicrag.retrieve.sieve"):
        released_sieve(InProcess(), 60)
    assert "sieve.timeout_s=60 is not honoured" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="atomicrag.retrieve.sieve"):
        released_sieve(InProcess(), 0)
    assert "not honoured" not in caplog.text
