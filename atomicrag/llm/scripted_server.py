"""The scripted model's HTTP face: an OpenAI-compatible server on 127.0.0.1 for a :class:`ScriptedModel`.

``scripts/parity_released.py --llm scripted`` starts it behind the recording proxy. A reply the
model marks late (``Reply.delay_s``: the sieve's ``sieve_late`` branch) is held that long before it
is sent, and its response carries the delay in ``REPLY_DELAY_HEADER``, so that the recording keeps
it and a replay can hold the reply again (``record_proxy``). ``branch_of`` reads the branch back
from a recorded reply (its ``system_fingerprint``).
"""
from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from atomicrag.llm.record_proxy import REPLY_DELAY_HEADER
from atomicrag.llm.scripted import MODEL_NAME, Reply, ScriptedModel


def completion(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat completion object for ``reply`` (token counts: characters / 4, rounded up)."""
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
    out = -(-len(reply.text) // 4)
    digest = hashlib.sha256(f"{reply.fingerprint}|{reply.text}".encode()).hexdigest()[:16]
    return {"id": f"scripted-{digest}", "object": "chat.completion",
            "created": 0, "model": body.get("model") or MODEL_NAME, "system_fingerprint": reply.fingerprint,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply.text}}],
            "usage": {"prompt_tokens": -(-prompt // 4), "completion_tokens": out,
                      "total_tokens": -(-prompt // 4) + out}}


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a pipeline's burst of concurrent requests (the default backlog is 5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a timed-out or cancelled request) is not the server's error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ScriptedServer:
    """Serves a :class:`ScriptedModel` on 127.0.0.1 (``/v1/chat/completions``, ``/v1/models``)."""

    def __init__(self, model: ScriptedModel, *, port: int = 0) -> None:
        self.model = model
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", port), self._handler())
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The completion for ``body`` and how long to hold it before sending (0: at once)."""
        reply = self.model.reply(body)
        with self._lock:
            self.counts[reply.branch] = self.counts.get(reply.branch, 0) + 1
        return completion(reply, body), reply.delay_s

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, obj: Any, delay_s: float = 0.0) -> None:
                data = json.dumps(obj, ensure_ascii=False).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if delay_s:
                    self.send_header(REPLY_DELAY_HEADER, f"{delay_s:g}")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model",
                                                                 "owned_by": "atomicrag"}]})
                elif self.path.rstrip("/").endswith("/version"):
                    self._send(200, {"version": "scripted"})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError as exc:
                    self._send(400, {"error": {"message": f"body is not JSON: {exc}", "type": "invalid_request"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                reply, delay_s = outer.answer(body)
                if delay_s:  # a late reply: the client may have given up by the time it is sent
                    time.sleep(delay_s)
                self._send(200, reply, delay_s)

            def log_message(self, format: str, *args: Any) -> None:  # quiet: the proxy logs requests
                return

        return Handler


def branch_of(reply: dict[str, Any] | None) -> tuple[str, str, str] | None:
    """(stage, branch, subject) of a recorded scripted reply, or None for any other reply."""
    fp = (reply or {}).get("system_fingerprint") or ""
    if not fp.startswith("scripted:"):
        return None
    _, stage, branch, subject = fp.split(":", 3)
    return stage, branch, subject

