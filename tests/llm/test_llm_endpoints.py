"""Several replicas behind one client (stub servers): least-outstanding dispatch, failover."""
from __future__ import annotations

from llm_stub_server import StubServer, completion

from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatRequest

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _reqs(n: int) -> list[ChatRequest]:
    return [ChatRequest(messages=[{"role": "user", "content": f"q{i}"}], schema=SCHEMA) for i in range(n)]


def _started() -> StubServer:
    s = StubServer()
    s.thread.start()
    return s


def test_slow_replica_gets_less_work_and_accounting_adds_up(stub: StubServer) -> None:
    slow = _started()
    try:
        slow.responder = lambda body, n: (200, completion('{"ok": true}', 5, 3), 0.4)
        stub.responder = lambda body, n: (200, completion('{"ok": true}', 5, 3), 0.02)
        client = OpenAIClient("x", "stub-model", base_urls=[stub.base_url, slow.base_url], concurrency=2)
        results = client.chat(_reqs(24))
        assert all(r.ok for r in results)
        fast_stats, slow_stats = client.endpoint_stats()
        assert slow_stats["sent"] >= 1 and fast_stats["sent"] > 2 * slow_stats["sent"]
        assert fast_stats["prompt_tokens"] + slow_stats["prompt_tokens"] == sum(r.prompt_tokens for r in results)
    finally:
        slow.httpd.shutdown()
        slow.httpd.server_close()


def test_dead_replica_requests_finish_on_the_other_without_using_retries(stub: StubServer) -> None:
    dead = _started()
    url = dead.base_url
    dead.httpd.shutdown()
    dead.httpd.server_close()  # connection refused from now on
    client = OpenAIClient("x", "stub-model", base_urls=[url, stub.base_url], concurrency=4, max_retries=0,
                          backoff_base_s=0.01)
    results = client.chat(_reqs(8))
    # max_retries=0, yet every request survives the dead replica: failover is not a retry
    assert all(r.ok for r in results), [r.error for r in results]
    dead_stats, live_stats = client.endpoint_stats()
    assert dead_stats["down"] and dead_stats["errors"] >= 1 and dead_stats["replies"] == 0
    assert live_stats["replies"] == 8 == len(stub.bodies)
    assert dead_stats["sent"] + live_stats["sent"] == sum(r.attempts for r in results)


def test_single_dead_server_is_a_counted_failure_after_retries() -> None:
    dead = _started()
    url = dead.base_url
    dead.httpd.shutdown()
    dead.httpd.server_close()
    client = OpenAIClient(url, "stub-model", max_retries=2, backoff_base_s=0.01)
    [r] = client.chat(_reqs(1))
    assert not r.ok and r.parsed is None and r.attempts == 3 and "ConnectError" in (r.error or "")
