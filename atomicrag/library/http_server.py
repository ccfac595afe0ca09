"""``atomicrag serve --index DIR``: one process holds the index, the embedder and the LLM, and
answers HTTP (the standard library's threaded server, hardened below; no web framework).

Every CLI command used to spend ~15 s loading models before it did anything; a server pays that
once. The JSON API (all bodies and replies are JSON; every error is OpenAI's shape,
``{"error": {"message", "type", "param", "code"}}``, with a 4xx/5xx status):

==========================  =======================================================================
``GET /``                   the web page: a query box, the answer with its sources, the evidence
                            atoms and the sub-graph that led to them (``web_page``)
``GET /health``             ``{"status": "ok", "index", "documents", "pid"}``
``GET /stats``              ``AtomicRAG.stats()``
``POST /query``             ``{"question": str}`` or ``{"questions": [str]}``, optional ``"answer"``
                            (true/false; default: answer when a reader is configured), ``"top"``
                            (keep the best N atoms), ``"graph"`` (true: each result's evidence
                            sub-graph under ``"subgraph"``) -> ``{"results": [...], "usage"}``
``POST /search``            the same, retrieval only
``POST /insert``            ``{"documents": [str | {"text", "doc_id", "title", "meta"}],
                            "replace": false}`` -> ``{"inserted": [ids], "documents": n}``; saved
``POST /delete``            ``{"doc_ids": [str], "missing_ok": false}`` -> ``{"deleted": n, ...}``; saved
``GET /v1/models``          one model, ``atomicrag``
``POST /v1/chat/completions``  OpenAI-compatible, with ``usage``: the last user message is the
                            question and the turns before it its context (``conversation_question``);
                            ``"stream": true`` replies with server-sent events. The reply (the
                            stream's last chunk) carries the full result under ``"atomicrag"``.
==========================  =======================================================================

A wrong method on a known path is 405 with an ``Allow`` header. Every answer has ``sources``:
the documents the reader cited (or whose lines hold the answer), else the documents it was given,
marked ``how="retrieved"`` (``with_sources``).

**Protection** (``http_access``): the ``Host`` and ``Origin`` allow-lists, an optional bearer token
(required to listen beyond loopback), JSON-only POSTs. **Load**: a listen backlog of 128, at most
``max_connections`` connections served at once (more get 503 with ``Retry-After`` instead of a
reset), an idle keep-alive connection closed after ``idle_timeout_s``, a request that does not
arrive whole within ``request_timeout_s`` dropped (408 for a slow body); bodies over 64 MiB 413.

Insert and delete save the index folder at once (under its write lock), so the folder on disk
is always what the server answers from.

A running server records itself in a small state file (``server_state_path(index)``: pid, port,
URL and the index path); ``find_index_server`` is what ``atomicrag query`` asks first, and it
removes a record whose process is gone or does not answer for that index.
"""
from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from atomicrag.library.http_access import (
    AccessPolicy,
    HTTPError,
    api_key_from_env,
    check_bind,
    cors_headers,
    error_payload,
    is_loopback,
)
from atomicrag.library.http_connections import CappedHTTPServer, DeadlineSocket, read_away

# what the server does, transport-free; re-exported: tests and callers import it from here
from atomicrag.library.index_service import (  # noqa: F401
    HISTORY_CHARS,
    HISTORY_TURNS,
    MODEL_ID,
    RETRIEVED_SOURCES,
    AfterMarker,
    IndexService,
    conversation_question,
    with_sources,
)

# the client side (finding a running server, asking it, stopping it) lives in server_client;
# re-exported: callers and the CLI import it from here
from atomicrag.library.server_client import (  # noqa: F401
    _write_state,
    find_index_server,
    read_server_state,
    remote_query,
    result_from_dict,
    server_state_path,
    stop_index_server,
)

log = logging.getLogger("atomicrag")

MAX_BODY = 64 * 1024 * 1024  # bytes a request body may have (an insert of many documents)


_DIGITS = re.compile(r"[0-9]{1,19}")


class _Handler(BaseHTTPRequestHandler):
    server: _IndexHTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive: a client's next request skips the TCP handshake
    server_version = "atomicrag"
    # TCP_NODELAY: headers and body go out as two writes; with Nagle on, the body waits for the
    # client's delayed ACK of the headers (~40 ms on Linux) on every keep-alive reply, more than
    # the retrieval itself (results/server/bench_server_retrieval.json)
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # setup()'s plain reader, unread: its file object would keep the socket open
        self._reader = DeadlineSocket(self.connection)
        self.rfile = io.BufferedReader(self._reader)
        self._cors: dict[str, str] = {}

    def log_message(self, fmt: str, *args: Any) -> None:  # access lines at debug, not on stderr
        log.debug("http %s: " + fmt, self.address_string(), *args)

    def handle_one_request(self) -> None:
        """Wait at most ``idle_timeout_s`` for the next request on this connection, then give the
        whole request ``request_timeout_s`` to arrive."""
        srv = self.server
        self._reader.deadline = None
        self.connection.settimeout(srv.idle_timeout_s)
        try:
            if not self.rfile.peek(1):  # the client closed the connection
                self.close_connection = True
                return
        except OSError:  # idle too long (TimeoutError), or the client reset
            self.close_connection = True
            return
        self._reader.deadline = time.monotonic() + srv.request_timeout_s
        self._cors = {}
        super().handle_one_request()

    # --- replies
    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False, default=str).encode()
        self._send_bytes(status, data, "application/json", headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str,
                    headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in {**self._cors, **(headers or {})}.items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (a malformed request line, headers too long, an
        unknown method) as JSON errors too."""
        self.log_error("code %d, message %s", code, message)
        self.close_connection = True
        short = self.responses.get(code, ("error",))[0]
        self._send(code, error_payload(message or short, code, code=short.lower().replace(" ", "_")))

    # --- requests
    def _body(self) -> dict[str, Any]:
        if self.headers.get("Transfer-Encoding"):
            raise HTTPError("chunked request bodies are not taken: send Content-Length", 411,
                            code="length_required")
        raw_length = (self.headers.get("Content-Length") or "0").strip()
        if not _DIGITS.fullmatch(raw_length):
            raise HTTPError(f"bad Content-Length {raw_length!r}: expected a non-negative integer", 400,
                            code="bad_content_length")
        length = int(raw_length)
        if length > MAX_BODY:
            raise HTTPError(f"request body of {length} bytes is over the {MAX_BODY}-byte limit", 413,
                            code="body_too_large")
        try:
            raw = self.rfile.read(length) if length else b""
        except TimeoutError as exc:
            raise HTTPError(f"the request body did not arrive within {self.server.request_timeout_s:g} s", 408,
                            code="request_timeout") from exc
        if len(raw) < length:
            raise HTTPError(f"the request body ended after {len(raw)} of {length} bytes", 400,
                            code="incomplete_body")
        self._reader.deadline = None  # the request is in: the reply is not held to the read deadline
        self.connection.settimeout(self.server.request_timeout_s)
        try:
            body = json.loads(raw or b"{}")
        except RecursionError as exc:
            raise HTTPError("the request body is nested too deeply", code="invalid_json") from exc
        except ValueError as exc:
            raise HTTPError(f"the request body is not JSON: {exc}", code="invalid_json") from exc
        if not isinstance(body, dict):
            raise HTTPError("the request body must be a JSON object", code="invalid_json")
        return body

    def _routes(self) -> dict[str, dict[str, Callable[..., Any]]]:
        service = self.server.service
        return {
            "/health": {"GET": service.health},
            "/stats": {"GET": service.rag.stats},
            "/v1/models": {"GET": lambda: {"object": "list", "data": [
                {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "atomicrag"}]}},
            "/query": {"POST": service.query},
            "/search": {"POST": lambda b: service.query(b, answer=False)},
            "/insert": {"POST": service.insert},
            "/delete": {"POST": service.delete},
            "/v1/chat/completions": {"POST": self._chat},
        }

    def _chat(self, body: dict[str, Any]) -> Any:
        if not isinstance(body.get("stream", False), bool):
            raise HTTPError('"stream" must be true or false', param="stream")
        if body.get("stream"):
            self._stream(self.server.service.chat_stream(body))
            return None
        return self.server.service.chat(body)[0]

    def _dispatch(self, method: str) -> None:
        policy = self.server.policy
        path = urlsplit(self.path).path.rstrip("/") or "/"
        body_read = method not in ("POST", "PUT", "PATCH")  # a body still unread must not be the next request
        if body_read:  # the request is in: the reply's writes get the whole timeout, not what was left
            self._reader.deadline = None
            self.connection.settimeout(self.server.request_timeout_s)
        try:
            policy.check_host(self.headers)
            origin = policy.check_origin(self.headers)
            self._cors = cors_headers(origin)
            if method == "OPTIONS":  # a CORS preflight (no token: browsers send none with it)
                self.close_connection = self.close_connection or not body_read
                self._send_bytes(204, b"", "text/plain", {"Allow": "GET, POST, OPTIONS"})
                return
            if path == "/" and method in ("GET", "HEAD"):
                from atomicrag.library.web_page import PAGE

                self._send_bytes(200, PAGE.encode(), "text/html; charset=utf-8",
                                 {"Cache-Control": "no-store", "X-Frame-Options": "DENY",
                                  "Content-Security-Policy": "default-src 'self'; style-src 'unsafe-inline'; "
                                  "script-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'"})
                return
            policy.check_token(self.headers)
            routes = self._routes()
            if path == "/":
                routes["/"] = {"GET": lambda: None}
            if path not in routes:
                raise HTTPError(f"no {method} {path}; GET /health, /stats, /v1/models; POST /query, /search, "
                                "/insert, /delete, /v1/chat/completions", 404, code="not_found")
            handlers = routes[path]
            if method not in handlers and not (method == "HEAD" and "GET" in handlers):
                allow = ", ".join(handlers)
                raise HTTPError(f"{path} takes {allow}, not {method}", 405, code="method_not_allowed",
                                headers={"Allow": allow})
            if method in ("GET", "HEAD"):
                self._send(200, handlers["GET"]())
                return
            policy.check_json(self.headers)
            body = self._body()
            body_read = True
            reply = handlers["POST"](body)
            if reply is not None:  # None: streamed
                self._send(200, reply)
        except HTTPError as exc:
            self._refuse(exc.status, exc.payload(), exc.headers, body_read)
        except (ValueError, KeyError) as exc:  # the library's own checks: empty question, unknown id
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            self._refuse(400, error_payload(str(msg), 400), None, body_read)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        except Exception as exc:
            log.exception("%s %s failed", method, path)
            self._refuse(500, error_payload(f"{type(exc).__name__}: {exc}", 500), None, body_read)

    def _refuse(self, status: int, payload: Any, headers: dict[str, str] | None, body_read: bool) -> None:
        if not body_read:  # the unread body must not be parsed as the next request: close, read it away
            self.close_connection = True
        try:
            self._send(status, payload, headers)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return
        if not body_read:
            self._drain()

    def _drain(self) -> None:
        """Read what is left of a refused request (up to 1 MiB, 1 s) before closing: closing a socket
        with unread data resets the connection, and the client could lose the error reply."""
        try:
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            return
        read_away(self.connection, time.monotonic() + 1.0)

    def _stream(self, chunks: Any) -> None:
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")  # the stream's end is the connection's end
            for k, v in self._cors.items():
                self.send_header(k, v)
            self.end_headers()
            self.close_connection = True
            try:
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False, default=str)}\n\n".encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, TimeoutError):  # the client left: stop generating
                return
            except Exception as exc:  # the headers are sent: the error goes in the stream, as OpenAI's do
                log.exception("stream failed")
                err = error_payload(f"{type(exc).__name__}: {exc}", 500)
                self.wfile.write(f"data: {json.dumps(err)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        finally:
            chunks.close()

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_OPTIONS(self) -> None:
        self._dispatch("OPTIONS")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")


class _IndexHTTPServer(CappedHTTPServer):
    """The index server: its service and access policy over a capped threaded server."""

    def __init__(self, address: tuple[str, int], service: IndexService, policy: AccessPolicy, **limits: Any) -> None:
        self.service, self.policy = service, policy
        super().__init__(address, _Handler, **limits)


def make_server(rag: Any, index_dir: str | Path | None = None, *, host: str = "127.0.0.1",
                port: int = 0, api_key: str | None = None, cors_origins: Iterable[str] = (),
                allowed_hosts: Iterable[str] = (), max_connections: int = 128, idle_timeout_s: float = 15.0,
                request_timeout_s: float = 30.0) -> _IndexHTTPServer:
    """An HTTP server over ``rag`` (not yet serving: call ``serve_forever()``, e.g. in a thread);
    ``port=0`` lets the OS pick a free port (``server.url`` names it). ``api_key``: the bearer
    token every request needs (required for a ``host`` other than loopback); ``cors_origins``:
    sites whose pages may call it; ``allowed_hosts``: names besides loopback it answers to."""
    check_bind(host, api_key)
    policy = AccessPolicy.build(host, api_key, cors_origins, allowed_hosts)
    return _IndexHTTPServer((host, port), IndexService(rag, index_dir), policy, max_connections=max_connections,
                            idle_timeout_s=idle_timeout_s, request_timeout_s=request_timeout_s)


def warm_up(rag: Any) -> None:
    """Load what a query needs now (the embedder, the graph's tensors, the reader's LLM), so
    the first request does not pay for it."""
    from atomicrag.engine.api import resolve_reader_name

    if len(rag):
        rag.search("warm-up")
    if resolve_reader_name(rag.config.reader.name, rag.config.dataset.reader) != "none":
        rag.llm  # noqa: B018 - builds (or attaches to) the LLM server


def serve_index(index_dir: str | Path, *, host: str = "127.0.0.1", port: int = 0,
                overrides: Sequence[str] = (), progress: bool = False, api_key: str | None = None,
                cors_origins: Iterable[str] = (), allowed_hosts: Iterable[str] = ()) -> int:
    """Load ``index_dir``, warm it up and serve it until SIGINT/SIGTERM; returns 0. ``api_key``
    defaults to ``$ATOMICRAG_API_KEY``."""
    from atomicrag.library.api import AtomicRAG

    api_key = api_key or api_key_from_env()
    check_bind(host, api_key)  # before minutes of loading
    AccessPolicy.build(host, api_key, cors_origins, allowed_hosts)
    index = Path(index_dir)
    if find_index_server(index):
        raise RuntimeError(f"a server of {index} is already running at {read_server_state(index)['url']}")
    t0 = time.perf_counter()
    with AtomicRAG.load(index, overrides=overrides, progress=progress) as rag:
        warm_up(rag)
        httpd = make_server(rag, index, host=host, port=port, api_key=api_key, cors_origins=cors_origins,
                            allowed_hosts=allowed_hosts)
        state = _write_state(index, httpd.url, httpd.server_address[1])

        def stop(signum: int, _frame: Any) -> None:  # shutdown() waits for serve_forever: not here
            threading.Thread(target=httpd.shutdown, daemon=True).start()

        in_main = threading.current_thread() is threading.main_thread()  # signals go to the main thread only
        previous = signal.signal(signal.SIGTERM, stop) if in_main else None
        guard = "a bearer token (ATOMICRAG_API_KEY)" if api_key else "no token: loopback only"
        if not is_loopback(host):  # the token and every answer cross the network as plain HTTP
            log.warning("serving %s on %s over plain HTTP: beyond a trusted network put a TLS proxy in front "
                        "(and --allow-host the name it forwards)", index, host or "0.0.0.0")
        print(f"serving {index} ({rag!r}) at {httpd.url} (ready in {time.perf_counter() - t0:.1f} s; {guard}); "
              "`atomicrag query --index` uses it; Ctrl-C stops it", flush=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            if in_main:
                signal.signal(signal.SIGTERM, previous)
            httpd.server_close()
            current = read_server_state(index)
            if current and int(current["pid"]) == os.getpid():
                state.unlink(missing_ok=True)
    return 0
