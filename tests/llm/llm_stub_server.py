"""A scriptable OpenAI-compatible stub server on 127.0.0.1 (threaded ``http.server``)."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A responder gets (request body, 0-based request number) and returns
# (HTTP status, reply content or raw body, seconds to sleep before answering).
Responder = Callable[[dict[str, Any], int], "tuple[int, Any, float]"]


def completion(content: str, prompt_tokens: int = 11, completion_tokens: int = 7) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": "stub-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class StubServer:
    def __init__(self) -> None:
        self.responder: Responder = lambda body, n: (200, completion('{"ok": true}'), 0.0)
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        # What /v1/models says: the served ids, who owns them ("vllm", "me" = llama-cpp-python),
        # and vLLM's max_model_len; /version answers only when ``version`` is set (vLLM does).
        self.model_ids = ["stub-model"]
        self.owned_by: str | None = None
        self.max_model_len: int | None = None
        self.version: str | None = None
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    data = []
                    for mid in stub.model_ids:
                        entry: dict[str, Any] = {"id": mid, "object": "model"}
                        if stub.owned_by:
                            entry["owned_by"] = stub.owned_by
                        if stub.max_model_len:
                            entry["max_model_len"] = stub.max_model_len
                        data.append(entry)
                    self._send(200, {"object": "list", "data": data})
                elif self.path.rstrip("/") == "/version" and stub.version:
                    self._send(200, {"version": stub.version})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with stub.lock:
                    n = len(stub.bodies)
                    stub.bodies.append(body)
                    stub.headers.append(dict(self.headers))
                status, payload, delay = stub.responder(body, n)
                if delay:
                    time.sleep(delay)
                self._send(status, payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"
