"""The recording proxy: same body → same reply, replay without an upstream, per-stage comparison."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from atomicrag.llm.record_proxy import (
    RecordingError,
    RecordProxy,
    canonical_json,
    compare_labels,
    hash_messages,
    load_recording,
    read_request_log,
    request_key,
)


class FakeUpstream:
    """An OpenAI-like server whose every reply differs (a counter), like a sampling model would."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()
        up = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with up.lock:
                    up.calls += 1
                    n = up.calls
                if body.get("fail"):
                    self._send(503, {"error": {"message": "overloaded"}})
                    return
                self._send(200, {"choices": [{"message": {"content": f"reply {n}"}, "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": n}})

            def do_GET(self) -> None:
                self._send(200, {"data": [{"id": "m", "owned_by": "vllm"}]})

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def upstream():
    up = FakeUpstream()
    yield up
    up.close()


RULES = {"ner": r"^Extract named entities", "reader": r"^Answer the question"}


def _chat(base: str, system: str, user: str, **extra: Any) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0.0, **extra}
    return httpx.post(f"{base}/chat/completions", json=body, timeout=10)


def test_same_body_gets_the_first_reply_for_both_clients(tmp_path: Path, upstream: FakeUpstream) -> None:
    with RecordProxy(tmp_path / "rec.jsonl", upstream=upstream.url, request_log=tmp_path / "log.jsonl",
                     stage_rules=RULES) as proxy:
        r1 = _chat(proxy.client_url("ours"), "Extract named entities.", "Paris is in France.")
        # the same body with keys in another order is the same request (canonical JSON)
        body = {"temperature": 0.0, "messages": [{"role": "system", "content": "Extract named entities."},
                                                  {"role": "user", "content": "Paris is in France."}], "model": "m"}
        r2 = httpx.post(f"{proxy.client_url('released')}/chat/completions", json=body, timeout=10)
        r3 = _chat(proxy.client_url("released"), "Extract named entities.", "Rome is in Italy.")
    assert r1.json() == r2.json()
    assert r1.json()["choices"][0]["message"]["content"] == "reply 1"
    assert r3.json()["choices"][0]["message"]["content"] == "reply 2"
    assert upstream.calls == 2  # the repeat never reached the model
    assert proxy.stats.hits == 1 and proxy.stats.misses == 2
    log = read_request_log(tmp_path / "log.jsonl")
    assert [(e["label"], e["stage"], e["outcome"]) for e in log] == [
        ("ours", "ner", "recorded"), ("released", "ner", "hit"), ("released", "ner", "recorded")]


def test_replay_serves_recordings_without_upstream_and_refuses_unknown_bodies(tmp_path: Path,
                                                                             upstream: FakeUpstream) -> None:
    rec = tmp_path / "rec.jsonl"
    with RecordProxy(rec, upstream=upstream.url) as proxy:
        first = _chat(proxy.client_url("a"), "Answer the question.", "Q1").json()
        httpx.get(f"{proxy.client_url('a')}/models", timeout=10)
    with RecordProxy(rec, mode="replay") as replay:
        again = _chat(replay.client_url("b"), "Answer the question.", "Q1")
        models = httpx.get(f"{replay.client_url('b')}/models", timeout=10)
        unknown = _chat(replay.client_url("b"), "Answer the question.", "Q2")
    assert again.json() == first
    assert models.json()["data"][0]["id"] == "m"
    assert unknown.status_code == 404 and "no recorded reply" in unknown.json()["error"]["message"]
    assert upstream.calls == 1


def test_upstream_outage_is_passed_on_not_recorded(tmp_path: Path, upstream: FakeUpstream) -> None:
    rec = tmp_path / "rec.jsonl"
    with RecordProxy(rec, upstream=upstream.url) as proxy:
        bad = _chat(proxy.client_url("a"), "x", "y", fail=True)
        bad2 = _chat(proxy.client_url("a"), "x", "y", fail=True)
    assert bad.status_code == 503 and bad2.status_code == 503
    assert upstream.calls == 2  # asked again: a 5xx is never replayed
    assert load_recording(rec) == {}


def test_streaming_and_non_json_bodies_get_clear_errors(tmp_path: Path, upstream: FakeUpstream) -> None:
    with RecordProxy(tmp_path / "rec.jsonl", upstream=upstream.url) as proxy:
        s = _chat(proxy.client_url("a"), "x", "y", stream=True)
        n = httpx.post(f"{proxy.url}/v1/chat/completions", content=b"{not json", timeout=10)
    assert s.status_code == 400 and "stream" in s.json()["error"]["message"]
    assert n.status_code == 400 and "not JSON" in n.json()["error"]["message"]
    assert upstream.calls == 0


def test_torn_recording_line_names_file_and_line(tmp_path: Path) -> None:
    rec = tmp_path / "rec.jsonl"
    rec.write_text(json.dumps({"key": "k", "status": 200, "reply": {}}) + "\n{\"key\": \"tor", encoding="utf-8")
    with pytest.raises(RecordingError, match=r"rec.jsonl:2"):
        load_recording(rec)
    rec.write_text(json.dumps({"key": "k"}) + "\n", encoding="utf-8")
    with pytest.raises(RecordingError, match="status"):
        load_recording(rec)


def test_compare_labels_counts_equal_and_differing_bodies_per_stage(tmp_path: Path,
                                                                   upstream: FakeUpstream) -> None:
    with RecordProxy(tmp_path / "rec.jsonl", upstream=upstream.url, request_log=tmp_path / "log.jsonl",
                     stage_rules=RULES) as proxy:
        for label in ("ours", "released"):
            _chat(proxy.client_url(label), "Extract named entities.", "P1")
            _chat(proxy.client_url(label), "Answer the question.", "Q1")
        _chat(proxy.client_url("ours"), "Extract named entities.", "P2", max_tokens=512)
        _chat(proxy.client_url("released"), "Extract named entities.", "P2")
    report = compare_labels(read_request_log(tmp_path / "log.jsonl"), "ours", "released")
    assert report["reader"]["equal"] == 1 and report["reader"]["first_difference"] is None
    ner = report["ner"]
    assert (ner["n_ours"], ner["n_released"], ner["equal"], ner["only_ours"], ner["only_released"]) == (2, 2, 1, 1, 1)
    assert ner["first_difference"] == "$.max_tokens: only in first"
    # the prompts are the same, only a sampling parameter differs
    assert ner["messages_equal"] == 2 and ner["first_parameter_difference"] == "$.max_tokens: only in first"
    assert ner["differing_parameters"] == ["max_tokens"]
    assert ner["tokens_ours"]["prompt"] == 20


def test_canonical_json_ignores_key_order_but_not_values() -> None:
    assert canonical_json({"b": 1, "a": "é"}) == canonical_json({"a": "é", "b": 1}) == '{"a":"é","b":1}'
    assert canonical_json({"a": 1}) != canonical_json({"a": 1.5})


def test_fields_left_at_the_api_default_are_the_same_request(tmp_path: Path, upstream: FakeUpstream) -> None:
    """The released code's SDK call writes n=1, seed=null, max_tokens=null and temperature 0; ours
    leaves them out and writes 0.0. Both ask the model the same thing, so both get the one reply the
    model gave (before this, the second body went to the model again and could come back different),
    and the report names the fields spelled differently. A real difference still differs."""
    with RecordProxy(tmp_path / "rec.jsonl", upstream=upstream.url, request_log=tmp_path / "log.jsonl",
                     stage_rules=RULES) as proxy:
        ours = _chat(proxy.client_url("ours"), "Extract named entities.", "P1")
        released = httpx.post(f"{proxy.client_url('released')}/chat/completions", timeout=10, json={
            "model": "m", "messages": [{"role": "system", "content": "Extract named entities."},
                                       {"role": "user", "content": "P1"}],
            "temperature": 0, "n": 1, "seed": None, "max_tokens": None, "top_p": 1, "presence_penalty": 0,
            "frequency_penalty": 0, "stream": False})
        other = _chat(proxy.client_url("released"), "Extract named entities.", "P1", n=2)
    assert released.json() == ours.json() and upstream.calls == 2  # `other` (n=2) is another request
    assert other.json()["choices"][0]["message"]["content"] == "reply 2"
    ner = compare_labels(read_request_log(tmp_path / "log.jsonl"), "ours", "released")["ner"]
    assert ner["equal"] == 1 and ner["spelled_differently"] == ["frequency_penalty", "max_tokens", "n", "presence_penalty",
                                                                "seed", "stream", "temperature", "top_p"]


def test_a_recording_keyed_by_an_older_rule_is_keyed_again_on_load(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Q"}], "temperature": 0.0}
    rec = tmp_path / "rec.jsonl"
    rec.write_text(json.dumps({"key": "an-old-key", "method": "POST", "path": "/v1/chat/completions",
                               "body": hash_messages(body), "status": 200,
                               "reply": {"choices": [{"message": {"content": "A"}}]}}) + "\n", encoding="utf-8")
    entries = load_recording(rec)
    assert list(entries) == [request_key("POST", "/v1/chat/completions", body)]
    assert request_key("POST", "/v1/chat/completions", {**body, "n": 1, "temperature": 0}) == list(entries)[0]


def test_a_resend_by_the_clients_http_layer_is_counted_apart(tmp_path: Path, upstream: FakeUpstream) -> None:
    """The released code's OpenAI SDK sends a body again after a connection error (its
    ``x-stainless-retry-count`` header > 0): the pipeline asked once, so the comparison leaves the
    resend out (before, it showed as an extra released request) and counts it."""
    with RecordProxy(tmp_path / "rec.jsonl", upstream=upstream.url, request_log=tmp_path / "log.jsonl",
                     stage_rules=RULES) as proxy:
        _chat(proxy.client_url("ours"), "Extract named entities.", "P1")
        body = {"model": "m", "messages": [{"role": "system", "content": "Extract named entities."},
                                           {"role": "user", "content": "P1"}], "temperature": 0.0}
        for retry in ("0", "1"):
            httpx.post(f"{proxy.client_url('released')}/chat/completions", json=body, timeout=10,
                       headers={"x-stainless-retry-count": retry})
    log = read_request_log(tmp_path / "log.jsonl")
    assert [e["client_retry"] for e in log] == [0, 0, 1]
    ner = compare_labels(log, "ours", "released")["ner"]
    assert (ner["n_ours"], ner["n_released"], ner["equal"], ner["only_released"], ner["resent_released"]) == (1, 1, 1, 0, 1)


def test_a_retry_whose_first_attempt_never_arrived_is_the_request() -> None:
    """The SDK's first attempt can fail before it reaches the proxy (a dead pooled connection): the
    request logged with retry count 1 is then the only one asked, not a resend."""
    body = {"key": "k1", "method": "POST", "stage": "ner", "usage": None, "body": {"messages": []}}
    log = [{**body, "label": "ours", "client_retry": 0}, {**body, "label": "released", "client_retry": 1}]
    ner = compare_labels(log, "ours", "released")["ner"]
    assert (ner["equal"], ner["only_released"], ner["resent_released"]) == (1, 0, 0)


def test_our_clients_resend_after_a_timeout_is_counted_apart_too(tmp_path: Path) -> None:
    """Our OpenAI client sends a request again when the first sending timed out (a slow reply under
    load); it says so in ``x-atomicrag-resend`` as the SDK does in its header, so the comparison
    counts the resend apart instead of showing it as a second request only ours asked."""
    from atomicrag.llm.openai_client import OpenAIClient
    from atomicrag.llm.protocol import ChatRequest

    class SlowFirst(FakeUpstream):
        def __init__(self) -> None:
            super().__init__()
            handler = self.server.RequestHandlerClass
            plain = handler.do_POST
            up = self

            def slow_first(h: Any) -> None:
                with up.lock:
                    first = up.calls == 0
                if first:
                    import time

                    time.sleep(1.5)  # past the client's timeout: it sends the request again
                plain(h)

            handler.do_POST = slow_first

    up = SlowFirst()
    try:
        with RecordProxy(tmp_path / "rec.jsonl", upstream=up.url, request_log=tmp_path / "log.jsonl",
                         stage_rules=RULES) as proxy:
            client = OpenAIClient(proxy.client_url("ours"), "m", api_key_env=None, timeout_s=1.0,
                                  max_retries=2, backoff_base_s=0.01)
            [res] = client.chat([ChatRequest(messages=[{"role": "system", "content": "Extract named entities."},
                                                       {"role": "user", "content": "P1"}], seed=None)])
            assert res.ok and res.attempts == 2
    finally:
        up.close()
    log = read_request_log(tmp_path / "log.jsonl")
    assert sorted(e["client_retry"] for e in log if e["stage"] == "ner") == [0, 1]
    ner = compare_labels(log, "ours", "released")["ner"]
    assert (ner["n_ours"], ner["resent_ours"]) == (1, 1)
