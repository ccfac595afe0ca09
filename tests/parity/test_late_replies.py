"""A sieve reply that comes after the sieve's timeout: the scripted model holds it (``sieve_late``),
the recording proxy records its delay and holds it again when it replays it, until the client hangs
up, so a CI replay costs one timeout, not the whole delay."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from atomicrag.llm.record_proxy import REPLY_DELAY_HEADER, RecordProxy, load_recording
from atomicrag.llm.scripted import SIEVE_BRANCHES, ScriptedModel
from atomicrag.llm.scripted_server import ScriptedServer, branch_of


class LateUpstream:
    """Replies after ``delay_s``, saying so in the delay header (as the scripted server does)."""

    def __init__(self, delay_s: float) -> None:
        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(delay_s)
                data = json.dumps({"choices": [{"message": {"content": "late"}, "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header(REPLY_DELAY_HEADER, f"{delay_s:g}")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


BODY = {"model": "m", "messages": [{"role": "user", "content": "which fragments?"}]}


def test_a_late_reply_is_recorded_with_its_delay_and_held_again_until_the_client_hangs_up(tmp_path: Path) -> None:
    up = LateUpstream(1.0)
    rec = tmp_path / "rec.jsonl"
    try:
        with RecordProxy(rec, upstream=up.url) as proxy:
            assert httpx.post(f"{proxy.url}/v1/chat/completions", json=BODY, timeout=10).status_code == 200
    finally:
        up.server.shutdown()
        up.server.server_close()
    [entry] = load_recording(rec).values()
    assert entry["delay_s"] == 1.0

    with RecordProxy(rec, mode="replay") as proxy:
        t0 = time.perf_counter()
        r = httpx.post(f"{proxy.url}/v1/chat/completions", json=BODY, timeout=10)
        assert r.status_code == 200 and time.perf_counter() - t0 >= 0.95, "a client that waits gets it late"
        # a client that gives up at its own timeout: the proxy stops holding the reply for it
        proxy.stats.held_s.clear()
        next(iter(proxy.entries.values()))["delay_s"] = 20.0  # a long hold, cut short by the hang-up
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{proxy.url}/v1/chat/completions", json=BODY, timeout=0.3)
        deadline = time.monotonic() + 5
        while not proxy.stats.held_s and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.stats.held_s and proxy.stats.held_s[0] < 5, proxy.stats.held_s


def test_the_scripted_sieve_late_branch_is_held_past_the_timeout() -> None:
    """Its reply is readable (a pipeline that waits for it keeps one candidate), held ``late_delay_s``
    and marked with the delay header."""
    assert "sieve_late" in SIEVE_BRANCHES
    model = ScriptedModel([], [f"Where was Person {k} born?" for k in range(12)], {"sieve": "^Judge the fragments"},
                          late_delay_s=0.6)
    k = SIEVE_BRANCHES.index("sieve_late")
    query = model.queries[k]
    fragments = json.dumps({"fragments": [{"id": i, "text": f"fragment {i}"} for i in range(3)]})
    body = {"model": "scripted", "messages": [{"role": "system", "content": "Judge the fragments."},
                                              {"role": "user", "content": f"Question: {query}\n{fragments}"}]}
    reply = model.reply(body)
    assert reply.branch == "sieve_late" and reply.delay_s == 0.6 and '{"keep_indices": [1]}' in reply.text
    with ScriptedServer(model) as server:
        t0 = time.perf_counter()
        r = httpx.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=10)
        took = time.perf_counter() - t0
    assert took >= 0.55 and r.headers[REPLY_DELAY_HEADER] == "0.6"
    assert branch_of(r.json())[:2] == ("sieve", "sieve_late")
