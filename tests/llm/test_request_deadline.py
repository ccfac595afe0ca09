"""A request's deadline (``ChatRequest.deadline_s``): the released sieve bounds each task by 60 s and
keeps every candidate after it; our OpenAI-compatible client ends a request whose reply has not come
by its deadline as a counted failure, without sending it again, and the LLM cache never keeps it."""
from __future__ import annotations

import time
from pathlib import Path

from llm_stub_server import StubServer, completion

from atomicrag.llm.cache import CachedLLM, cache_key
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatRequest, honours_deadline


def _client(stub: StubServer, **kw) -> OpenAIClient:
    kw.setdefault("backoff_base_s", 0.01)
    return OpenAIClient(stub.base_url, "stub-model", api_key_env="ATOMICRAG_TEST_KEY", **kw)


def _req(deadline_s: float | None) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": "which fragments?"}], schema=None,
                       deadline_s=deadline_s)


def test_a_reply_after_the_deadline_is_a_timed_out_failure_and_not_sent_again(stub: StubServer) -> None:
    stub.responder = lambda body, n: (200, completion("late reply"), 1.5)
    t0 = time.perf_counter()
    # the client's own per-attempt timeout and retries would resend; the deadline bounds them all
    [r] = _client(stub, timeout_s=30, max_retries=3).chat([_req(0.4)])
    took = time.perf_counter() - t0
    assert not r.ok and r.timed_out and "timed out" in r.error and r.text != "late reply"
    assert took < 1.4, f"the client waited {took:.2f} s for a reply past its 0.4 s deadline"
    assert len(stub.bodies) == 1, "a timed-out request was sent again"
    assert "deadline_s" not in stub.bodies[0], "the deadline is ours, not the server's"


def test_the_deadline_bounds_the_resends_together(stub: StubServer) -> None:
    # each attempt times out at the client's 0.3 s; three of them would take 0.9 s and more
    stub.responder = lambda body, n: (200, completion("slow"), 2.0)
    t0 = time.perf_counter()
    [r] = _client(stub, timeout_s=0.3, max_retries=5).chat([_req(0.5)])
    assert r.timed_out and time.perf_counter() - t0 < 1.4
    assert len(stub.bodies) <= 2


def test_a_reply_before_the_deadline_is_the_reply(stub: StubServer) -> None:
    stub.responder = lambda body, n: (200, completion("in time"), 0.05)
    [r] = _client(stub).chat([_req(5.0)])
    assert r.ok and not r.timed_out and r.text == "in time" and len(stub.bodies) == 1


def test_the_deadline_counts_from_the_concurrency_slot(stub: StubServer) -> None:
    """As the released code's wait_for inside its semaphore: time queued behind other requests
    does not count, so three 0.3 s replies one at a time all meet a 0.6 s deadline."""
    stub.responder = lambda body, n: (200, completion(f"reply {n}"), 0.3)
    results = _client(stub, concurrency=1).chat([_req(0.6) for _ in range(3)])
    assert [r.ok for r in results] == [True, True, True]


def test_a_timed_out_reply_is_not_cached_and_the_deadline_is_not_in_the_key(stub: StubServer,
                                                                              tmp_path: Path) -> None:
    assert cache_key("m", _req(None)) == cache_key("m", _req(60.0))
    stub.responder = lambda body, n: (200, completion("late reply"), 1.0 if n == 0 else 0.0)
    llm = CachedLLM(_client(stub, max_retries=0), tmp_path / "cache.sqlite")
    [first] = llm.chat([_req(0.3)])
    assert first.timed_out and not first.cached
    [again] = llm.chat([_req(0.3)])  # a later run asks again: nothing was stored
    assert again.ok and again.text == "late reply" and not again.cached and len(stub.bodies) == 2


def test_in_process_backends_say_they_cannot_honour_a_deadline(stub: StubServer) -> None:
    assert honours_deadline(_client(stub)) and not honours_deadline(FakeLLM())
