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

import itertools
import json
import logging
import os
import re
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
from atomicrag.library.types import QueryResult

log = logging.getLogger("atomicrag")

MODEL_ID = "atomicrag"  # the one model /v1/models lists and /v1/chat/completions answers as
MAX_BODY = 64 * 1024 * 1024  # bytes a request body may have (an insert of many documents)
HISTORY_TURNS = 4  # earlier chat turns read as the question's context
HISTORY_CHARS = 400  # of each such turn
RETRIEVED_SOURCES = 3  # documents an answer that cites none lists as what it was given

RequestError = HTTPError  # the name this module used before http_access held it


# ---------------------------------------------------------------------------------- requests
def _questions(body: dict[str, Any]) -> list[str]:
    if "question" in body:
        if not isinstance(body["question"], str):
            raise HTTPError('"question" must be a string', param="question")
        return [body["question"]]
    qs = body.get("questions")
    if not isinstance(qs, list) or not all(isinstance(q, str) for q in qs):
        raise HTTPError('the body needs "question" (a string) or "questions" (a list of strings)',
                        param="questions")
    return qs


def _flag(body: dict[str, Any], name: str, default: bool | None) -> bool | None:
    value = body.get(name, default)
    if value is not None and not isinstance(value, bool):
        raise HTTPError(f'"{name}" must be true, false or absent', param=name)
    return value


def _message_text(m: dict[str, Any], i: int) -> str:
    content = m.get("content")
    if content is None:
        return ""
    if isinstance(content, list):  # the content-parts form: the text parts, joined
        if not all(isinstance(p, dict) for p in content):
            raise HTTPError(f"messages[{i}].content parts must be objects like "
                            '{"type": "text", "text": "..."}', param=f"messages[{i}].content")
        content = " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    if not isinstance(content, str):
        raise HTTPError(f"messages[{i}].content must be a string or a list of content parts",
                        param=f"messages[{i}].content")
    return content.strip()


def conversation_question(messages: Any) -> str:
    """The question a chat asks: its last user message, and, when turns came before it, the last
    ``HISTORY_TURNS`` of them (user and assistant, each cut to ``HISTORY_CHARS``) after it as
    context, so a follow-up ("Where did he move?") retrieves and is read with the entities named
    before. System messages are not read (the reader has its own instructions)."""
    if not isinstance(messages, list) or not messages:
        raise HTTPError('"messages" must be a non-empty list of {"role", "content"} objects', param="messages")
    turns: list[tuple[str, str]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise HTTPError(f'messages[{i}] must be an object with a "role" string', param=f"messages[{i}]")
        if m["role"] in ("user", "assistant"):
            turns.append((m["role"], _message_text(m, i)))
    last = max((i for i, (role, _) in enumerate(turns) if role == "user"), default=None)
    if last is None:
        raise HTTPError('"messages" has no message with role "user"', param="messages")
    question = turns[last][1]
    if not question:
        raise HTTPError("the last user message has no text content", param="messages")
    earlier = [(r, t[:HISTORY_CHARS]) for r, t in turns[:last] if t][-HISTORY_TURNS:]
    if not earlier:
        return question
    said = " | ".join(f"{'user' if r == 'user' else 'assistant'}: {t}" for r, t in earlier)
    return f"{question}\n(Earlier in this conversation: {said})"


def _documents(body: dict[str, Any]) -> list[str | dict[str, Any]]:
    docs = body.get("documents")
    if not isinstance(docs, list) or not docs:
        raise HTTPError('"documents" must be a non-empty list of strings or {"text", ...} objects',
                        param="documents")
    for i, d in enumerate(docs):
        if isinstance(d, str):
            continue
        if not isinstance(d, dict):
            raise HTTPError(f"documents[{i}]: each document must be a string or an object with \"text\"",
                            param=f"documents[{i}]")
        if not isinstance(d.get("text"), str):
            raise HTTPError(f'documents[{i}].text must be a string', param=f"documents[{i}].text")
        for key in ("doc_id", "id", "title"):
            if d.get(key) is not None and not isinstance(d[key], str):
                raise HTTPError(f"documents[{i}].{key} must be a string", param=f"documents[{i}].{key}")
        if d.get("meta") is not None and not isinstance(d["meta"], dict):
            raise HTTPError(f"documents[{i}].meta must be an object", param=f"documents[{i}].meta")
    return docs


def with_sources(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (``QueryResult.to_dict()``) with a source list whenever it has an answer: an
    answer that cites no context line and whose text is in none (a small model paraphrasing, or
    answering wrongly) used to come with ``sources: []``; it now lists the documents of the
    reader's first context lines, marked ``how="retrieved"`` (what it read, not what it cited)."""
    if not result.get("answer") or result.get("sources"):
        return result
    sources: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(result.get("context") or [], 1):
        doc = str(item.get("passage_id", ""))
        if doc and doc not in sources:
            if len(sources) == RETRIEVED_SOURCES:
                break
            sources[doc] = {"n": len(sources) + 1, "doc_id": doc, "title": str(item.get("title") or ""),
                            "context": [], "how": "retrieved"}
        if doc in sources:
            sources[doc]["context"].append(n)
    return {**result, "sources": list(sources.values())}


class _Usage:
    """Tokens the LLM spent on one request: the library's accountant totals before and after,
    read while holding the index's lock, so no other request's tokens fall in between."""

    def __init__(self, rag: Any) -> None:
        self.rag = rag
        self.start = self._totals()

    def _totals(self) -> tuple[int, int, int]:
        acc = getattr(self.rag, "accountant", None)
        if acc is None:
            return 0, 0, 0
        t = acc.total()
        return t.prompt_tokens + t.cached_prompt_tokens, t.completion_tokens + t.cached_completion_tokens, \
            t.cached_prompt_tokens

    def usage(self) -> dict[str, Any]:
        """OpenAI's ``usage``; tokens answered from the LLM cache count (they are the request's
        tokens), the cached part of the prompt under ``prompt_tokens_details``."""
        end = self._totals()
        prompt, completion, cached = (b - a for a, b in zip(self.start, end))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached}}


class IndexService:
    """The API over one loaded ``AtomicRAG`` (and the folder it saves to); transport-free, so the
    HTTP handler stays a thin adapter."""

    def __init__(self, rag: Any, index_dir: str | Path | None) -> None:
        self.rag = rag
        self.index_dir = Path(index_dir).resolve() if index_dir is not None else None
        self._write = threading.Lock()  # one insert/delete (and its save) at a time
        self._lock = getattr(rag, "_lock", None) or threading.RLock()  # the index's own (reentrant)

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "index": str(self.index_dir) if self.index_dir else None,
                "documents": len(self.rag), "pid": os.getpid()}

    def query(self, body: dict[str, Any], *, answer: bool | None = None) -> dict[str, Any]:
        want = _flag(body, "answer", answer)
        graph = _flag(body, "graph", False)
        top = body.get("top")
        if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 0):
            raise HTTPError('"top" must be a non-negative integer', param="top")
        questions = _questions(body)
        with self._lock:
            usage = _Usage(self.rag)
            results = self.rag.query(questions, answer=want if answer is None else answer)
            out = []
            for r in results:
                if top is not None:
                    r.items = r.items[:top]
                d = with_sources(r.to_dict())
                if graph:
                    from atomicrag.library.evidence_graph import evidence_subgraph

                    d["subgraph"] = evidence_subgraph(self.rag.graph, [i.atom_id for i in r.items],
                                                      r.entities_extracted)
                out.append(d)
            return {"results": out, "usage": usage.usage()}

    def _save(self) -> None:
        if self.index_dir is not None:
            self.rag.save(self.index_dir)

    def insert(self, body: dict[str, Any]) -> dict[str, Any]:
        from atomicrag.library.types import normalize_documents

        docs = _documents(body)
        replace = _flag(body, "replace", False)
        with self._write:
            normalized = normalize_documents(docs, taken=() if replace else {d.id for d in self.rag.documents})
            self.rag.insert(normalized, replace=bool(replace))
            self._save()
            report = self.rag.report(d.id for d in normalized)
        return {"inserted": [d.id for d in normalized], "documents": len(self.rag),
                "failed_chunks": {r.doc_id: r.failed_chunks for r in report if r.failures}}

    def delete(self, body: dict[str, Any]) -> dict[str, Any]:
        ids = body.get("doc_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise HTTPError('"doc_ids" must be a list of document ids (strings)', param="doc_ids")
        missing_ok = _flag(body, "missing_ok", False)
        with self._write:
            n = self.rag.delete(ids, missing_ok=bool(missing_ok))
            if n:
                self._save()
        return {"deleted": n, "documents": len(self.rag)}

    def chat(self, body: dict[str, Any]) -> tuple[dict[str, Any], QueryResult]:
        """The OpenAI chat-completion reply to ``body`` (and the result it came from)."""
        question = conversation_question(body.get("messages"))
        with self._lock:
            usage = _Usage(self.rag)
            result = self.rag.query(question, answer=True)
            spent = usage.usage()
        if result.answer is None or (not result.answer and result.errors):
            raise HTTPError("no answer: " + "; ".join(result.errors or ["the reader returned nothing"]), 502,
                            code="no_answer")
        reply = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": str(body.get("model") or MODEL_ID),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": result.answer},
                         "finish_reason": "length" if result.answer_cut else "stop"}],
            "usage": spent,
            "atomicrag": with_sources(result.to_dict()),  # the sources: retrieved atoms, documents, context
        }
        return reply, result

    def chat_stream(self, body: dict[str, Any]) -> _HeldStream:
        """``chat.completion.chunk`` objects of the answer to ``body`` as the reader writes it.

        Retrieval runs, and the reader's first text arrives, before the first chunk is yielded, so
        a bad request or a failed retrieval is still a JSON error with its status. The content
        streamed is what the model writes after its "Answer:" marker (its reasoning before it is
        not the answer), token by token from an LLM that streams; a reply with no marker sends the
        parsed answer once, at the end. The last chunk carries the finish reason ("length" when
        the budget cut the answer), ``usage`` and the whole result (parsed answer, sources) under
        ``"atomicrag"``. The index's lock is held until the stream ends or is closed."""
        question = conversation_question(body.get("messages"))
        self._lock.acquire()
        try:
            usage = _Usage(self.rag)
            stream = self.rag.query_stream(question)
            first = next(stream, None)  # retrieval, then the first words of the reply
        except BaseException:
            self._lock.release()
            raise
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
            yield chunk({}, "length" if result.answer_cut else "stop", usage=usage.usage(),
                        atomicrag=with_sources(result.to_dict()))

        def release() -> None:
            stream.close()
            self._lock.release()

        return _HeldStream(chunks(), release)


class _HeldStream:
    """A chunk generator and what ``close()`` gives back (the index's lock) once, whether the
    stream ended, failed or was never started."""

    def __init__(self, chunks: Iterator[dict[str, Any]], release: Callable[[], None]) -> None:
        self._chunks, self._release = chunks, release

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._chunks

    def close(self) -> None:
        if self._release is not None:
            release, self._release = self._release, None
            try:
                self._chunks.close()  # type: ignore[attr-defined]
            finally:
                release()


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


# ---------------------------------------------------------------------------------- transport
class _DeadlineReader:
    """The request stream with a deadline: each read waits at most the time left of the request
    (a client that trickles its headers or body cannot hold a thread past ``request_timeout_s``)."""

    def __init__(self, raw: Any, sock: socket.socket) -> None:
        self.raw, self.sock = raw, sock
        self.deadline: float | None = None

    def _arm(self) -> None:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive within the request timeout")
            self.sock.settimeout(left)

    def readline(self, *args: Any) -> bytes:
        self._arm()
        return self.raw.readline(*args)

    def read(self, *args: Any) -> bytes:
        self._arm()
        return self.raw.read(*args)

    def peek(self, *args: Any) -> bytes:
        return self.raw.peek(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


_DIGITS = re.compile(r"[0-9]{1,19}")
_GET, _POST = ("GET",), ("POST",)


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
        self.rfile = _DeadlineReader(self.rfile, self.connection)
        self._cors: dict[str, str] = {}

    def log_message(self, fmt: str, *args: Any) -> None:  # access lines at debug, not on stderr
        log.debug("http %s: " + fmt, self.address_string(), *args)

    def handle_one_request(self) -> None:
        """Wait at most ``idle_timeout_s`` for the next request on this connection, then give the
        whole request ``request_timeout_s`` to arrive."""
        srv = self.server
        self.rfile.deadline = None
        self.connection.settimeout(srv.idle_timeout_s)
        try:
            if not self.rfile.peek(1):  # the client closed the connection
                self.close_connection = True
                return
        except OSError:  # idle too long (TimeoutError), or the client reset
            self.close_connection = True
            return
        self.rfile.deadline = time.monotonic() + srv.request_timeout_s
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
        self.rfile.deadline = None  # the request is in: the reply is not held to the read deadline
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
            self.connection.settimeout(1.0)
            left = 1 << 20
            while left > 0 and (chunk := self.connection.recv(min(65536, left))):
                left -= len(chunk)
        except OSError:
            pass

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


class _IndexHTTPServer(ThreadingHTTPServer):
    """One thread per connection, at most ``max_connections`` of them; a connection beyond that
    gets a 503 from a short-lived thread (no reset), and past ``2 * max_connections`` waiting
    refusals the socket is closed at once (the last resort of a flood)."""

    daemon_threads = True  # an open keep-alive connection does not hold up shutdown
    block_on_close = False
    request_queue_size = 128  # the listen backlog (socketserver's default of 5 reset bursts of clients)

    def __init__(self, address: tuple[str, int], service: IndexService, policy: AccessPolicy, *,
                 max_connections: int = 128, idle_timeout_s: float = 15.0, request_timeout_s: float = 30.0) -> None:
        if max_connections < 1 or idle_timeout_s <= 0 or request_timeout_s <= 0:
            raise ValueError("max_connections must be >= 1 and the timeouts > 0")
        self.service, self.policy = service, policy
        self.max_connections = max_connections
        self.idle_timeout_s, self.request_timeout_s = idle_timeout_s, request_timeout_s
        self._count = threading.Lock()
        self.active = 0  # connections being served
        self.refusing = 0  # connections being answered 503
        self.refused = 0  # total 503s (for tests and logs)
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._count:
            full = self.active >= self.max_connections
            if not full:
                self.active += 1
            elif self.refusing < 2 * self.max_connections:
                self.refusing += 1
            else:
                self.shutdown_request(request)
                return
        target = self._refuse_busy if full else self.process_request_thread
        threading.Thread(target=target, args=(request, client_address), daemon=True).start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._count:
                self.active -= 1

    def _refuse_busy(self, request: socket.socket, _client: Any) -> None:
        """503 to a connection over the cap: read its request head (1 s at most), answer, read
        away the rest, close."""
        try:
            request.settimeout(1.0)
            head = b""
            try:
                while b"\r\n\r\n" not in head and len(head) < 65536 and (chunk := request.recv(4096)):
                    head += chunk
            except OSError:
                pass
            data = json.dumps(error_payload(f"the server is busy ({self.max_connections} connections); retry",
                                            503, code="server_busy")).encode()
            request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                            b"Retry-After: 1\r\nConnection: close\r\n"
                            b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
            request.shutdown(socket.SHUT_WR)
            left = 1 << 20
            while left > 0 and (chunk := request.recv(65536)):
                left -= len(chunk)
        except OSError:
            pass
        finally:
            request.close()
            with self._count:
                self.refusing -= 1
                self.refused += 1


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
    from atomicrag.answer.readers import resolve_reader_name

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
