"""``atomicrag serve --index DIR``: one process holds the index, the embedder and the LLM, and
answers HTTP (the standard library's ``ThreadingHTTPServer``; no web framework).

Every CLI command used to spend ~15 s loading models before it did anything; a server pays that
once. The JSON API (all bodies and replies are JSON; errors are ``{"error": "..."}`` with a 4xx/5xx
status):

==========================  =======================================================================
``GET /health``             ``{"status": "ok", "index", "documents", "pid"}``
``GET /stats``              ``AtomicRAG.stats()``
``POST /query``             ``{"question": str}`` or ``{"questions": [str]}``, optional ``"answer"``
                            (true/false; default: answer when a reader is configured), ``"top"``
                            (keep the best N atoms) -> ``{"results": [QueryResult.to_dict()]}``
``POST /search``            the same, retrieval only
``POST /insert``            ``{"documents": [str | {"text", "doc_id", "title", "meta"}],
                            "replace": false}`` -> ``{"inserted": [ids], "documents": n}``; saved
``POST /delete``            ``{"doc_ids": [str], "missing_ok": false}`` -> ``{"deleted": n, ...}``; saved
``GET /v1/models``          one model, ``atomicrag``
``POST /v1/chat/completions``  OpenAI-compatible: the last user message is the question, answered
                            from the index; ``"stream": true`` replies with server-sent events
                            (``chat.completion.chunk`` objects as the reader writes the answer,
                            then ``data: [DONE]``). The reply (the stream's last chunk) carries the
                            full result (parsed answer, sources) under ``"atomicrag"``.
==========================  =======================================================================

Insert and delete save the index folder at once (under its write lock), so the folder on disk
is always what the server answers from. The server listens on 127.0.0.1 by default and has no
authentication: put it behind a proxy before exposing it.

A running server records itself in a small state file (``server_state_path(index)``: pid, port,
URL and the index path); ``find_index_server`` is what ``atomicrag query`` asks first, and it
removes a record whose process is gone or does not answer for that index.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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
from atomicrag.library.types import QueryResult

log = logging.getLogger("atomicrag")

MODEL_ID = "atomicrag"  # the one model /v1/models lists and /v1/chat/completions answers as
MAX_BODY = 64 * 1024 * 1024  # bytes a request body may have (an insert of many documents)


class RequestError(ValueError):
    """A bad request: answered with status 400 (404 for an unknown path) and its message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------------------------- state file
def _questions(body: dict[str, Any]) -> list[str]:
    if "question" in body:
        if not isinstance(body["question"], str):
            raise RequestError('"question" must be a string')
        return [body["question"]]
    qs = body.get("questions")
    if not isinstance(qs, list) or not all(isinstance(q, str) for q in qs):
        raise RequestError('the body needs "question" (a string) or "questions" (a list of strings)')
    return qs


def _last_user_message(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError('"messages" must be a non-empty list of {"role", "content"} objects')
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):  # the content-parts form: the text parts, joined
                content = " ".join(str(p.get("text", "")) for p in content
                                   if isinstance(p, dict) and p.get("type") == "text")
            if isinstance(content, str) and content.strip():
                return content
            raise RequestError("the last user message has no text content")
    raise RequestError('"messages" has no message with role "user"')


class IndexService:
    """The API over one loaded ``AtomicRAG`` (and the folder it saves to); transport-free, so the
    HTTP handler stays a thin adapter."""

    def __init__(self, rag: Any, index_dir: str | Path | None) -> None:
        self.rag = rag
        self.index_dir = Path(index_dir).resolve() if index_dir is not None else None
        self._write = threading.Lock()  # one insert/delete (and its save) at a time

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "index": str(self.index_dir) if self.index_dir else None,
                "documents": len(self.rag), "pid": os.getpid()}

    def query(self, body: dict[str, Any], *, answer: bool | None = None) -> dict[str, Any]:
        want = body.get("answer", answer)
        if want is not None and not isinstance(want, bool):
            raise RequestError('"answer" must be true, false or absent')
        top = body.get("top")
        if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 0):
            raise RequestError('"top" must be a non-negative integer')
        results = self.rag.query(_questions(body), answer=want if answer is None else answer)
        out = []
        for r in results:
            if top is not None:
                r.items = r.items[:top]
            out.append(r.to_dict())
        return {"results": out}

    def _save(self) -> None:
        if self.index_dir is not None:
            self.rag.save(self.index_dir)

    def insert(self, body: dict[str, Any]) -> dict[str, Any]:
        from atomicrag.library.types import normalize_documents

        docs = body.get("documents")
        if not isinstance(docs, list) or not docs:
            raise RequestError('"documents" must be a non-empty list of strings or {"text", ...} objects')
        if not all(isinstance(d, (str, dict)) for d in docs):
            raise RequestError('each document must be a string or an object with "text"')
        replace = bool(body.get("replace", False))
        with self._write:
            normalized = normalize_documents(docs, taken=() if replace else {d.id for d in self.rag.documents})
            self.rag.insert(normalized, replace=replace)
            self._save()
            report = self.rag.report(d.id for d in normalized)
        return {"inserted": [d.id for d in normalized], "documents": len(self.rag),
                "failed_chunks": {r.doc_id: r.failed_chunks for r in report if r.failures}}

    def delete(self, body: dict[str, Any]) -> dict[str, Any]:
        ids = body.get("doc_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise RequestError('"doc_ids" must be a list of document ids (strings)')
        with self._write:
            n = self.rag.delete(ids, missing_ok=bool(body.get("missing_ok", False)))
            if n:
                self._save()
        return {"deleted": n, "documents": len(self.rag)}

    def chat(self, body: dict[str, Any]) -> tuple[dict[str, Any], QueryResult]:
        """The OpenAI chat-completion reply to ``body`` (and the result it came from)."""
        question = _last_user_message(body)
        result = self.rag.query(question, answer=True)
        if result.answer is None or (not result.answer and result.errors):
            raise RequestError("no answer: " + "; ".join(result.errors or ["the reader returned nothing"]), 502)
        reply = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": str(body.get("model") or MODEL_ID),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": result.answer},
                         "finish_reason": "stop"}],
            "atomicrag": result.to_dict(),  # the sources: retrieved atoms, documents, context
        }
        return reply, result

    def chat_stream(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """``chat.completion.chunk`` objects of the answer to ``body`` as the reader writes it.

        Retrieval runs, and the reader's first text arrives, before the first chunk is yielded, so
        a bad request or a failed retrieval is still a JSON error with its status. The content
        streamed is what the model writes after its "Answer:" marker (its reasoning before it is
        not the answer), token by token from an LLM that streams; a reply with no marker sends the
        parsed answer once, at the end. The last chunk carries the finish reason ("length" when
        the budget cut the answer) and the whole result (parsed answer, sources) under
        ``"atomicrag"``."""
        question = _last_user_message(body)
        stream = self.rag.query_stream(question)
        first = next(stream, None)  # retrieval, then the first words of the reply
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": str(body.get("model") or MODEL_ID)}

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

        def chunks() -> Iterator[dict[str, Any]]:
            yield chunk({"role": "assistant"})
            after = AfterMarker()
            for text in (itertools.chain([first], stream) if first is not None else ()):
                if out := after.feed(text):
                    yield chunk({"content": out})
            result = stream.get_result()
            if not after.found and result.answer:
                yield chunk({"content": result.answer})
            yield chunk({}, "length" if result.answer_cut else "stop", atomicrag=result.to_dict())

        return chunks()


class AfterMarker:
    """Feeds of a streamed reply in, the text after its first "Answer:" out (leading spaces dropped)."""

    MARKER = "Answer:"

    def __init__(self) -> None:
        self.found = False
        self._head = ""  # text before the marker, kept until the marker is complete

    def feed(self, text: str) -> str:
        if self.found:
            return text
        self._head += text
        at = self._head.find(self.MARKER)
        if at < 0:
            return ""
        self.found = True
        return self._head[at + len(self.MARKER):].lstrip()


class _Handler(BaseHTTPRequestHandler):
    server: _IndexHTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive: a client's next request skips the TCP handshake
    # TCP_NODELAY: headers and body go out as two writes; with Nagle on, the body waits for the
    # client's delayed ACK of the headers (~40 ms on Linux) on every keep-alive reply, more than
    # the retrieval itself (results/server/bench_server_retrieval.json)
    disable_nagle_algorithm = True

    def log_message(self, fmt: str, *args: Any) -> None:  # access lines at debug, not on stderr
        log.debug("http %s: " + fmt, self.address_string(), *args)

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, ensure_ascii=False, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError as exc:
            raise RequestError("bad Content-Length header") from exc
        if length > MAX_BODY:
            raise RequestError(f"request body of {length} bytes is over the {MAX_BODY}-byte limit", 413)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise RequestError(f"the request body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise RequestError("the request body must be a JSON object")
        return body

    def _dispatch(self, method: str) -> None:
        service = self.server.service
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        try:
            if method == "GET":
                routes = {"/health": service.health, "/stats": service.rag.stats,
                          "/v1/models": lambda: {"object": "list", "data": [
                              {"id": MODEL_ID, "object": "model", "owned_by": "atomicrag"}]}}
                if path not in routes:
                    raise RequestError(f"no GET {path}; GET /health, /stats or /v1/models", 404)
                self._send(200, routes[path]())
                return
            body = self._body()
            if path == "/v1/chat/completions":
                if body.get("stream"):
                    self._stream(service.chat_stream(body))
                else:
                    self._send(200, service.chat(body)[0])
                return
            post = {"/query": service.query, "/search": lambda b: service.query(b, answer=False),
                    "/insert": service.insert, "/delete": service.delete}
            if path not in post:
                raise RequestError(f"no POST {path}; POST /query, /search, /insert, /delete or "
                                   "/v1/chat/completions", 404)
            self._send(200, post[path](body))
        except RequestError as exc:
            self._send(exc.status, {"error": str(exc)})
        except (ValueError, KeyError) as exc:  # the library's own checks: empty question, unknown id
            self._send(400, {"error": exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)})
        except Exception as exc:
            log.exception("%s %s failed", method, path)
            self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

    def _stream(self, chunks: Iterator[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the stream's end is the connection's end
        self.end_headers()
        try:
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False, default=str)}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client left: stop generating for it
            chunks.close() if hasattr(chunks, "close") else None
            self.close_connection = True
            return
        except Exception as exc:  # the headers are sent: the error goes in the stream, as OpenAI's do
            log.exception("stream failed")
            self.wfile.write(f"data: {json.dumps({'error': f'{type(exc).__name__}: {exc}'})}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")


class _IndexHTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # an open keep-alive connection does not hold up shutdown

    def __init__(self, address: tuple[str, int], service: IndexService) -> None:
        self.service = service
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def make_server(rag: Any, index_dir: str | Path | None = None, *, host: str = "127.0.0.1",
                port: int = 0) -> _IndexHTTPServer:
    """An HTTP server over ``rag`` (not yet serving: call ``serve_forever()``, e.g. in a thread);
    ``port=0`` lets the OS pick a free port (``server.url`` names it)."""
    return _IndexHTTPServer((host, port), IndexService(rag, index_dir))


def warm_up(rag: Any) -> None:
    """Load what a query needs now (the embedder, the graph's tensors, the reader's LLM), so
    the first request does not pay for it."""
    from atomicrag.answer.readers import resolve_reader_name

    if len(rag):
        rag.search("warm-up")
    if resolve_reader_name(rag.config.reader.name, rag.config.dataset.reader) != "none":
        rag.llm  # noqa: B018 - builds (or attaches to) the LLM server


def serve_index(index_dir: str | Path, *, host: str = "127.0.0.1", port: int = 0,
                overrides: Sequence[str] = (), progress: bool = False) -> int:
    """Load ``index_dir``, warm it up and serve it until SIGINT/SIGTERM; returns 0."""
    from atomicrag.library.api import AtomicRAG

    index = Path(index_dir)
    if find_index_server(index):
        raise RuntimeError(f"a server of {index} is already running at {read_server_state(index)['url']}")
    t0 = time.perf_counter()
    with AtomicRAG.load(index, overrides=overrides, progress=progress) as rag:
        warm_up(rag)
        httpd = make_server(rag, index, host=host, port=port)
        state = _write_state(index, httpd.url, httpd.server_address[1])

        def stop(signum: int, _frame: Any) -> None:  # shutdown() waits for serve_forever: not here
            threading.Thread(target=httpd.shutdown, daemon=True).start()

        in_main = threading.current_thread() is threading.main_thread()  # signals go to the main thread only
        previous = signal.signal(signal.SIGTERM, stop) if in_main else None
        print(f"serving {index} ({rag!r}) at {httpd.url} (ready in {time.perf_counter() - t0:.1f} s); "
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
