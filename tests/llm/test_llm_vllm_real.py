"""Against a real CPU vLLM server (SmolLM2-135M, eager, bf16): dialect, schemas of every prompt
module, concurrency, token accounting against the server's own counters, the cache, a server
killed mid-run, and a clean stop.

Never asserts what the 135M model answers (greedy output differs between compiled and eager
modes): only that replies are schema-valid or counted, retried failures, and that the
numbers add up. One server serves the whole file (``vllm`` fixture in conftest.py).
"""
from __future__ import annotations

import os
import re
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from conftest import VllmHandle

from atomicrag.core.config import LLMConfig, PathsConfig
from atomicrag.llm.accounting import Accountant
from atomicrag.llm.factory import build_llm
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatRequest, ChatResult
from atomicrag.prompts import decompose, extraction, judge, ner, sieve, vocabulary

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

PASSAGES = [
    "Marie Curie was born in Warsaw in 1867 and won two Nobel Prizes.",
    "The Rhine Falls is a waterfall on the High Rhine in Switzerland.",
    "Alan Turing worked at Bletchley Park during the Second World War.",
    "Ada Lovelace wrote about the Analytical Engine of Charles Babbage.",
]
TOPIC_SCHEMA = {
    "type": "object",
    "properties": {
        "topic": {"type": "string", "enum": ["science", "geography", "history", "other"]},
        "keywords": {"type": "array", "items": {"type": "string", "maxLength": 24}, "maxItems": 3},
        "certain": {"type": "boolean"},
    },
    "required": ["topic", "keywords", "certain"],
}


def _topic_request(i: int, tag: str = "") -> ChatRequest:
    text = PASSAGES[i % len(PASSAGES)]
    return ChatRequest(messages=[{"role": "user", "content": f"{tag}Classify this passage ({i}): {text}"}],
                       schema=TOPIC_SCHEMA, max_tokens=128, module="classify")


def _client(vllm: VllmHandle, **kw: Any) -> OpenAIClient:
    # generous timeout: a request the client gives up on is still computed (and counted) by the server
    client = OpenAIClient(vllm.base_url, vllm.served, timeout_s=900, backoff_base_s=0.2, **kw)
    client.probe()
    return client


def _metrics(vllm: VllmHandle) -> dict[str, float]:
    """The server's own counters (Prometheus text), summed over label sets."""
    text = httpx.get(vllm.base_url.removesuffix("/v1") + "/metrics", timeout=10).text
    out: dict[str, float] = {}
    for name in ("vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total"):
        out[name] = sum(float(v) for v in re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.MULTILINE))
    return out


def _valid_or_counted(results: list[ChatResult], schema: dict[str, Any], max_retries: int) -> int:
    """Each result is schema-valid, or a failure after every attempt; returns the number valid."""
    ok = 0
    for r in results:
        if r.ok:
            jsonschema.validate(r.parsed, schema)
            ok += 1
        else:
            assert r.parsed is None and r.attempts == max_retries + 1 and r.error, r
    return ok


def test_probe_identifies_vllm_and_its_window(vllm: VllmHandle) -> None:
    client = OpenAIClient(vllm.base_url, vllm.served)
    [info] = client.probe()
    assert info.kind == "vllm" and vllm.served in info.models
    assert client.response_format_style == "json_schema"  # the only dialect vLLM 0.32 honours
    assert client.context_window == vllm.max_model_len


def test_concurrent_schema_replies(vllm: VllmHandle) -> None:
    client = _client(vllm, concurrency=8, max_retries=2)
    t0 = time.perf_counter()
    results = client.chat([_topic_request(i) for i in range(8)])
    wall = time.perf_counter() - t0
    assert _valid_or_counted(results, TOPIC_SCHEMA, 2) >= 6
    # 8 requests at once: far less wall time than their latencies added up
    assert wall < 0.6 * sum(r.latency_s for r in results)
    assert client.payload(_topic_request(0))["response_format"]["type"] == "json_schema"


def _module_requests() -> list[tuple[str, list[dict[str, str]], dict[str, Any]]]:
    text = PASSAGES[0]
    return [
        ("extraction", extraction.build_messages(text, ["Marie Curie", "Warsaw"], title="Marie Curie"),
         extraction.SCHEMA),
        ("ner", ner.build_messages(text, title="Marie Curie"), ner.SCHEMA),
        ("decompose", decompose.build_messages("Where was the winner of two Nobel Prizes born?",
                                               max_sub_questions=3, threshold=0.5), decompose.SCHEMA),
        ("sieve", sieve.build_messages("Where was Marie Curie born?", PASSAGES), sieve.SCHEMA),
        ("vocabulary", vocabulary.build_messages(["Marie Curie", "the", "Nobel Prize", "was"]),
         vocabulary.SCHEMA),
        ("judge_statements", judge.build_statement_messages("Where was Curie born?", "In Warsaw, Poland."),
         judge.SCHEMA["statements"]),
        ("judge_classify", judge.build_classify_messages("Where was Curie born?", ["Curie was born in Warsaw."],
                                                         ["Marie Curie was born in Warsaw."]),
         judge.SCHEMA["classify"]),
    ]


def test_every_prompt_module_schema(vllm: VllmHandle) -> None:
    client = _client(vllm, concurrency=8, max_retries=1)
    cases = _module_requests()
    requests = [ChatRequest(messages=msgs, schema=schema, max_tokens=256, module=name)
                for name, msgs, schema in cases]
    results = client.chat(requests)
    valid = {name: r.ok for (name, _, _), r in zip(cases, results, strict=True)}
    for (name, _, schema), r in zip(cases, results, strict=True):
        _valid_or_counted([r], schema, 1)
        # a failure is the model's (a reply cut at max_tokens, or off-schema), never the transport
        assert r.ok or "Error" not in (r.error or ""), (name, r.error)
    # guided decoding keeps most replies in shape; a 135M model may still loop until max_tokens
    assert sum(valid.values()) >= len(cases) // 2, valid


def test_accounting_equals_server_usage_and_cache_sends_nothing(vllm: VllmHandle, tmp_path: Path) -> None:
    cfg = LLMConfig(name="vllm", model=vllm.served, base_url=vllm.base_url, concurrency=4, max_retries=1,
                    timeout_s=900)
    paths = PathsConfig(cache_dir=str(tmp_path), llm_cache=str(tmp_path / "llm.sqlite"))
    acct = Accountant()
    llm = build_llm(cfg, paths, acct)
    before = _metrics(vllm)
    tag = f"run {time.time_ns()}: "  # fresh prompts, so the server really works on them
    try:
        first = llm.chat([_topic_request(i, tag) for i in range(6)])
        total = acct.total()
        mid = _metrics(vllm)
        second = llm.chat([_topic_request(i, tag) for i in range(6)])
        after = _metrics(vllm)
    finally:
        llm.close()
    # every token the client counted is one the server counted, and vice versa
    assert total.prompt_tokens == mid["vllm:prompt_tokens_total"] - before["vllm:prompt_tokens_total"] > 0
    assert total.completion_tokens == (mid["vllm:generation_tokens_total"]
                                       - before["vllm:generation_tokens_total"]) > 0
    assert sum(r.prompt_tokens for r in first) == total.prompt_tokens
    # the re-run is answered from the SQLite cache: zero requests reach the server. Failed
    # replies and replies cut at max_tokens (even when their JSON was repaired) are not cached:
    # they are asked again
    cacheable = [r.ok and r.finish_reason != "length" for r in first]
    assert any(cacheable) and [s.cached for s in second] == cacheable
    assert after == mid or not all(cacheable)
    assert acct.total().cached_calls == sum(cacheable)


def test_server_killed_mid_run_then_resumed(vllm: VllmHandle, tmp_path: Path) -> None:
    cfg = LLMConfig(name="vllm", model=vllm.served, base_url=vllm.base_url, concurrency=2, max_retries=2,
                    timeout_s=900)
    paths = PathsConfig(cache_dir=str(tmp_path), llm_cache=str(tmp_path / "llm.sqlite"))
    requests = [_topic_request(i, f"kill {time.time_ns()}: ") for i in range(12)]
    llm = build_llm(cfg, paths, Accountant())
    client: OpenAIClient = llm.backend.backend  # Accounted → Cached → client
    out: list[list[ChatResult]] = []
    worker = threading.Thread(target=lambda: out.append(llm.chat(requests)))
    worker.start()
    deadline = time.monotonic() + 120
    while client.endpoint_stats()[0]["replies"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    server = vllm.server
    assert server is not None and server.proc is not None
    os.killpg(server.proc.pid, signal.SIGKILL)  # the whole server, mid-batch, no goodbye
    worker.join(timeout=120)
    assert not worker.is_alive()
    [results] = out
    failed = [r for r in results if not r.ok]
    assert len(failed) < len(results) and failed
    for r in failed:  # retried, then a counted failure: never an empty success
        assert r.parsed is None and r.attempts == 3 and r.error, r.error
    assert any("ConnectError" in (r.error or "") or "Protocol" in (r.error or "") for r in failed)
    vllm.restart()  # same port: the re-run finds the server again
    rerun = llm.chat(requests)
    llm.close()
    # the server is back: no transport error is left (a 135M model may still miss the schema)
    assert all(r.ok or "Error" not in (r.error or "") for r in rerun), [r.error for r in rerun]
    assert sum(r.ok for r in rerun) > sum(r.ok for r in results)
    # finished requests come from the cache; only the failed ones were sent again
    assert sum(not r.cached for r in rerun) == len(failed)


def test_sigterm_stop_leaves_no_process_and_no_temp_files(vllm: VllmHandle) -> None:
    server = vllm.server
    assert server is not None and server.proc is not None
    pgid = server.proc.pid
    private_tmp = Path(server.env["TMPDIR"])  # type: ignore[index]
    assert any(private_tmp.iterdir())  # vLLM did write its vllm_dist_* file there, not in /tmp
    system_tmp_before = set(Path(tempfile.gettempdir()).glob("vllm_dist_*"))
    t0 = time.monotonic()
    server.stop()
    assert time.monotonic() - t0 < 15
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # no process of the server's group is left
    assert not private_tmp.exists()
    assert set(Path(tempfile.gettempdir()).glob("vllm_dist_*")) <= system_tmp_before
    vllm.server = None


def test_the_server_continues_a_reply_instead_of_opening_a_new_turn(vllm: VllmHandle) -> None:
    """The reader's follow-up (``ChatRequest.continue_reply``) sends vLLM's continue_final_message:
    the server accepts the body the client builds, and the prompt ends inside the assistant's reply
    (after "Answer:"), so it is shorter than the same chat sent as a plain request, which closes
    that turn and opens a new assistant turn. (What the 135M model writes next is not asserted.)"""
    msgs = [{"role": "user", "content": "Where was Marie Curie born? Context: " + PASSAGES[0]},
            {"role": "assistant", "content": "Marie Curie was born in Warsaw.\nAnswer:"}]
    client = _client(vllm, continues_replies=True)
    try:
        usage = {}
        for name, req in (("continue", ChatRequest(messages=msgs, max_tokens=8, continue_reply=True)),
                          ("plain", ChatRequest(messages=msgs, max_tokens=8))):
            resp = httpx.post(f"{vllm.base_url}/chat/completions", json=client.payload(req), timeout=300)
            assert resp.status_code == 200, resp.text[:300]
            usage[name] = resp.json()["usage"]["prompt_tokens"]
    finally:
        client.close()
    assert usage["continue"] < usage["plain"]  # no end-of-turn, no new assistant header
