"""OpenAIClient against a local stub server: retries, timeouts, schemas, usage, keys."""
from __future__ import annotations

import asyncio
import time

from llm_stub_server import StubServer, completion

from atomicrag.llm.openai_client import OpenAIClient, normalize_base_url
from atomicrag.llm.protocol import ChatRequest

SCHEMA = {"type": "object", "properties": {"named_entities": {"type": "array", "items": {"type": "string"}}},
          "required": ["named_entities"], "title": "Entities"}


def _client(stub: StubServer, **kw) -> OpenAIClient:
    kw.setdefault("backoff_base_s", 0.01)
    return OpenAIClient(stub.base_url, "stub-model", api_key_env="ATOMICRAG_TEST_KEY", **kw)


def _req(text: str = "Paris is in France", schema: dict | None = SCHEMA, **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], schema=schema, **kw)


def test_base_url_normalization() -> None:
    assert normalize_base_url("http://h:1") == "http://h:1/v1"
    assert normalize_base_url("http://h:1/v1/") == "http://h:1/v1"
    assert normalize_base_url("https://x.org/openai/v1") == "https://x.org/openai/v1"


def test_schema_payload_usage_and_key(stub: StubServer, monkeypatch) -> None:
    monkeypatch.setenv("ATOMICRAG_TEST_KEY", "sk-secret-123")
    stub.responder = lambda body, n: (200, completion('{"named_entities": ["Paris", "France"]}', 20, 9), 0)
    client = _client(stub)
    [r] = client.chat([_req(seed=7, max_tokens=50)])
    assert r.ok and r.parsed == {"named_entities": ["Paris", "France"]}
    assert (r.prompt_tokens, r.completion_tokens, r.attempts) == (20, 9, 1)
    assert r.model == "stub-model" and r.finish_reason == "stop" and r.latency_s > 0
    body = stub.bodies[0]
    assert body["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "Entities", "schema": SCHEMA, "strict": True}}
    assert (body["seed"], body["max_tokens"], body["temperature"], body["model"]) == (7, 50, 0.0, "stub-model")
    assert stub.headers[0]["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret" not in repr(client)


def test_json_object_style_and_free_text(stub: StubServer) -> None:
    stub.responder = lambda body, n: (200, completion("Answer: Paris"), 0)
    client = _client(stub, response_format_style="json_object")
    [r] = client.chat([_req(schema=None)])
    assert r.ok and r.text == "Answer: Paris" and "response_format" not in stub.bodies[0]
    stub.responder = lambda body, n: (200, completion('{"named_entities": []}'), 0)
    client.chat([_req()])
    assert stub.bodies[1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "Authorization" not in stub.headers[0]  # no key in the environment: no header


def test_unknown_response_format_fails_naming_model_and_setting(stub: StubServer) -> None:
    """A server that rejects the configured dialect is a failure, never a quiet switch."""
    def responder(body, n):
        if body.get("response_format", {}).get("type") == "json_schema":
            return 422, {"detail": [{"loc": ["body", "response_format", "type"], "msg": "bad"}]}, 0
        return 200, completion('{"named_entities": ["x"]}'), 0

    stub.responder = responder
    client = _client(stub)
    [r] = client.chat([_req()])
    assert not r.ok and r.parsed is None
    assert "llm.structured_output=false" in r.error and "response_format_style='json_object'" in r.error \
        and repr(client.model) in r.error
    assert client.response_format_style == "json_schema"
    assert [b["response_format"]["type"] for b in stub.bodies] == ["json_schema"]  # sent once, not switched


def test_retries_on_500_and_429_then_succeeds(stub: StubServer) -> None:
    def responder(body, n):
        if n == 0:
            return 500, {"error": "overloaded"}, 0
        if n == 1:
            return 429, {"error": "slow down"}, 0
        return 200, completion('{"named_entities": ["ok"]}', 5, 3), 0

    stub.responder = responder
    [r] = _client(stub).chat([_req()])
    assert r.ok and r.attempts == 3 and r.parsed == {"named_entities": ["ok"]}
    assert (r.prompt_tokens, r.completion_tokens) == (5, 3)


def test_persistent_500_fails_with_error(stub: StubServer) -> None:
    stub.responder = lambda body, n: (503, {"error": "down"}, 0)
    [r] = _client(stub, max_retries=2).chat([_req()])
    assert not r.ok and r.parsed is None and r.attempts == 3 and "HTTP 503" in r.error
    assert len(stub.bodies) == 3


def test_client_error_is_not_retried(stub: StubServer) -> None:
    stub.responder = lambda body, n: (401, {"error": "bad key"}, 0)
    [r] = _client(stub).chat([_req()])
    assert not r.ok and r.attempts == 1 and "HTTP 401" in r.error


def test_timeout_is_retried_then_reported(stub: StubServer) -> None:
    stub.responder = lambda body, n: (200, completion('{"named_entities": []}'), 1.0 if n < 2 else 0)
    [r] = _client(stub, timeout_s=0.3, max_retries=2).chat([_req()])
    assert r.ok and r.attempts == 3
    # the two timed-out attempts reported no tokens: only the reply's are counted, and the result
    # says how many attempts got none, so prompt tokens per replied attempt can be computed
    assert r.errored_attempts == 2 and r.prompt_tokens == completion("")["usage"]["prompt_tokens"]
    stub.responder = lambda body, n: (200, completion('{"named_entities": []}'), 1.0)
    [r] = _client(stub, timeout_s=0.3, max_retries=1).chat([_req()])
    assert not r.ok and "timeout" in r.error and r.parsed is None


def test_invalid_json_is_retried_and_counted(stub: StubServer) -> None:
    replies = ["not json", '{"named_entities": "wrong type"}', '{"named_entities": ["fine"]}']
    stub.responder = lambda body, n: (200, completion(replies[min(n, 2)]), 0)
    [r] = _client(stub).chat([_req()])
    assert r.ok and r.attempts == 3 and r.completion_tokens == 21
    assert stub.bodies[1]["temperature"] > 0  # a parse retry samples (seeded)
    stub.responder = lambda body, n: (200, completion("never json"), 0)
    [r] = _client(stub, max_retries=1).chat([_req()])
    assert not r.ok and r.parsed is None and "no parseable JSON" in r.error


def test_connection_refused_is_an_error_not_an_exception() -> None:
    client = OpenAIClient("http://127.0.0.1:9", "m", max_retries=1, backoff_base_s=0.01)
    [r] = client.chat([_req()])
    assert not r.ok and r.attempts == 2


def test_concurrency_is_bounded_and_order_kept(stub: StubServer) -> None:
    import threading

    active, peak, lock = [0], [0], threading.Lock()

    def responder(body, n):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        word = body["messages"][0]["content"]
        return 200, completion(f'{{"named_entities": ["{word}"]}}'), 0

    stub.responder = responder
    reqs = [_req(f"w{i}") for i in range(12)]
    results = _client(stub, concurrency=3).chat(reqs)
    assert [r.parsed["named_entities"][0] for r in results] == [f"w{i}" for i in range(12)]
    assert 1 < peak[0] <= 3


def test_chat_works_inside_a_running_event_loop(stub: StubServer) -> None:
    stub.responder = lambda body, n: (200, completion('{"named_entities": ["loop"]}'), 0)
    client = _client(stub)

    async def main():
        return client.chat([_req()])  # sync call from async code (notebooks, async apps)

    [r] = asyncio.run(main())
    assert r.ok and r.parsed == {"named_entities": ["loop"]}


def test_continued_reply_sends_vllms_parameters_only_to_a_server_that_continues(stub: StubServer) -> None:
    """The reader's follow-up continues its reply after "Answer:" (vLLM's continue_final_message);
    a client not known to support that (OpenAI's API rejects the parameters) fails the request
    instead of sending them, and a plain request never carries them."""
    stub.responder = lambda body, n: (200, completion(" Bern"), 0)
    msgs = [{"role": "user", "content": "Capital?"}, {"role": "assistant", "content": "It is Bern.\nAnswer:"}]
    [r] = _client(stub, continues_replies=True).chat([ChatRequest(messages=msgs, continue_reply=True)])
    assert r.ok and r.text == " Bern"
    assert (stub.bodies[0]["continue_final_message"], stub.bodies[0]["add_generation_prompt"]) == (True, False)
    _client(stub, continues_replies=True).chat([_req(schema=None)])
    assert "continue_final_message" not in stub.bodies[1]
    [r] = _client(stub, max_retries=0).chat([ChatRequest(messages=msgs, continue_reply=True)])
    assert not r.ok and "continue" in r.error and len(stub.bodies) == 2
