"""A recording, replaying OpenAI-compatible HTTP proxy in front of one LLM server.

Two pipelines (ours and the released code) talk to one model through this proxy. Every request
body is keyed by its canonical JSON (keys sorted, no whitespace, UTF-8 kept) after fields left at
the API default are dropped and sampling numbers read as numbers (``normalised_body``), so two
clients that ask the same thing get the *same* reply — the first one the server gave — and any
downstream difference between the pipelines is pipeline logic, not sampling noise.

- ``record`` mode forwards a request it has not seen to the upstream server and appends
  ``{key, method, path, body, status, reply}`` to a JSONL recording (one line, flushed and fsynced
  per reply); a request it has seen is answered from the recording.
- ``replay`` mode never contacts an upstream: a request not in the recording gets HTTP 404 with a
  JSON error naming the key and the recording, so a CI replay fails loudly instead of drifting.

Clients are told apart by a path prefix: ``http://host:port/c/<label>/v1/...`` is forwarded as
``/v1/...`` and logged under ``<label>`` (no prefix → label ``default``). The request log
(``requests.jsonl``: label, key, stage, hit/miss, usage) is what ``compare_labels`` reads to count
equal and differing bodies per stage and show the first difference.

With ``digest_messages=True`` the recording keeps each message's content only as its sha256
(``{"sha256": ...}``): a recording may then be committed although the prompts it saw are not
ours to store (the released code's prompts, read from a checkout at run time). Replay needs only
the key, which is computed from the digested body (so a recording is keyed again when it loads);
the request log (a work file) keeps the full bodies for the first-difference report.

A late reply: an upstream that held its reply on purpose says how long in ``REPLY_DELAY_HEADER``
(the scripted model's ``sieve_late``); the recording keeps it as ``delay_s``, and a reply taken from
the recording (a replay, or a second client in record mode) is held that long again, or until its
client hangs up, whichever comes first. A client that gave up at its own timeout so costs a replay
no more than that timeout, and a client that would wait still gets the reply late.

Stages are named by prompt prefix: ``stage_rules`` maps a name to a regular expression searched in
the first message's content (the system prompt, or the user turn when there is none); the first
rule that matches names the stage, else the stage is ``other``.
"""
from __future__ import annotations

import json
import os
import re
import select
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atomicrag.llm.protocol import RESEND_HEADER
from atomicrag.llm.request_compare import canonical_json, compare_labels, first_difference, read_request_log
from atomicrag.llm.request_keys import (  # noqa: F401 - the proxy's API names them too
    classify_stage,
    compile_rules,
    content_digest,
    first_message_text,
    hash_messages,
    normalised_body,
    request_key,
)

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["RecordProxy", "RecordingError", "canonical_json", "compare_labels", "first_difference",
           "hash_messages", "normalised_body", "read_request_log", "request_key"]

# response header of an upstream reply held on purpose: its delay in seconds (recorded as delay_s)
REPLY_DELAY_HEADER = "x-atomicrag-reply-delay"

LABEL_PREFIX = re.compile(r"^/c/([A-Za-z0-9_.-]+)(/.*)$")


class RecordingError(ValueError):
    """A recording file that cannot be read back (bad JSON, missing fields)."""


def load_recording(path: Path) -> dict[str, dict[str, Any]]:
    """key → entry from a recording JSONL; a bad line raises naming the file and line number."""
    entries: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return entries
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordingError(f"{path}:{lineno}: not a JSON line ({exc.msg}); "
                                     "a recording is one JSON object per line") from exc
            missing = [k for k in ("key", "status", "reply") if k not in entry]
            if missing:
                raise RecordingError(f"{path}:{lineno}: entry lacks field(s) {missing}; "
                                     "expected key, status, reply")
            if "method" in entry and "path" in entry:  # keyed again: recordings made before the
                entry["key"] = sequenced_key(request_key(entry["method"], entry["path"], entry.get("body")),  # key rule
                                             int(entry.get("occurrence") or 0))
            entries.setdefault(entry["key"], entry)  # the first reply given is the one replayed
    return entries


def sequenced_key(key: str, occurrence: int) -> str:
    """The recording key of a request's ``occurrence``-th asking by one client (0: the first)."""
    return key if occurrence == 0 else f"{key}#{occurrence}"


def _append_line(path: Path, obj: dict[str, Any]) -> None:
    # one whole line per write, flushed and fsynced, so a crash leaves at most a torn last line
    data = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class ProxyStats:
    hits: int = 0
    misses: int = 0
    upstream_errors: int = 0
    by_label_stage: Counter = field(default_factory=Counter)
    # seconds each recorded late reply was held before it was given (less than its delay_s when
    # its client hung up first)
    held_s: list = field(default_factory=list)


class _ProxyServer(ThreadingHTTPServer):
    # a pipeline's burst of concurrent requests must not overflow the listen queue (the default
    # backlog is 5): a dropped connection makes the client resend, and a resend of a request that
    # never arrived cannot be told from a second asking of the same request (``sequence_replies``)
    request_queue_size = 256
    daemon_threads = True


class RecordProxy:
    """The proxy server. ``start()`` serves on a thread; ``url`` is its base (without /v1)."""

    def __init__(self, recording: str | Path, *, upstream: str | None = None, mode: str = "record",
                 host: str = "127.0.0.1", port: int = 0, request_log: str | Path | None = None,
                 stage_rules: dict[str, str] | list[tuple[str, str]] | None = None,
                 timeout_s: float = 1800.0, default_max_tokens: int | None = None,
                 digest_messages: bool = False, sequence_stages: tuple[str, ...] = ()) -> None:
        if mode not in ("record", "replay"):
            raise ValueError(f"RecordProxy: mode must be 'record' or 'replay', got {mode!r}")
        if mode == "record" and not upstream:
            raise ValueError("RecordProxy: record mode needs an upstream server URL (http://host:port)")
        self.recording = Path(recording)
        self.recording.parent.mkdir(parents=True, exist_ok=True)
        self.request_log = Path(request_log) if request_log else None
        if self.request_log:
            self.request_log.parent.mkdir(parents=True, exist_ok=True)
        self.upstream = upstream.rstrip("/") if upstream else None
        if self.upstream and self.upstream.endswith("/v1"):
            self.upstream = self.upstream[: -len("/v1")]  # paths are forwarded whole (/v1/...)
        self.mode = mode
        self.timeout_s = timeout_s
        # a completion cap sent upstream for requests that carry none (the key stays that of the body
        # the client sent): an uncapped greedy loop of a small model runs to the end of its context,
        # which on a CPU server takes tens of minutes; None forwards bodies untouched
        self.default_max_tokens = default_max_tokens
        self.capped = 0
        self.digest_messages = digest_messages  # the recording keeps message digests, not texts
        # sequence_stages: in these stages the n-th time one client asks the same request it gets the
        # reply recorded for the n-th asking (a model asked again may answer otherwise, as it does a
        # judge's retry); elsewhere every asking gets the first reply. Each client counts its own
        # askings, so both pipelines see the same sequence; a resend by a client's HTTP layer is not
        # another asking (kept to stages whose clients ask one request at a time: a resend of a
        # request that never arrived cannot be told from a second asking)
        self.sequence_stages = frozenset(sequence_stages)
        self._asked: Counter = Counter()
        self.rules = compile_rules(stage_rules)
        self.entries = load_recording(self.recording)
        self.stats = ProxyStats()
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._seq = 0
        self._server = _ProxyServer((host, port), self._handler_class())
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def client_url(self, label: str) -> str:
        """The base URL (ending in /v1) a client named ``label`` should use."""
        return f"{self.url}/c/{label}/v1"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, name="record-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling ------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, raw_body: bytes, *, client_retry: int = 0,
               hold: Callable[[float], None] = time.sleep) -> tuple[int, bytes]:
        """Answer one request: (HTTP status, JSON reply bytes). ``client_retry``: the client's own
        retry count for this request (the OpenAI SDK's ``x-stainless-retry-count`` header, or ours), logged so
        a resend by the client's HTTP layer is told apart from a second call by the pipeline.
        ``hold(seconds)``: waits before a recorded late reply is given (the server's handler returns
        early when the client hangs up)."""
        m = LABEL_PREFIX.match(raw_path)
        label, path = (m.group(1), m.group(2)) if m else ("default", raw_path)
        if raw_body:
            try:
                body: Any = json.loads(raw_body)
            except json.JSONDecodeError:
                return 400, _error(f"record proxy: request body to {path} is not JSON")
        else:
            body = None
        if isinstance(body, dict) and body.get("stream"):
            return 400, _error("record proxy: streaming replies cannot be recorded; send stream=false")
        key = request_key(method, path, body)
        stage = classify_stage(body, self.rules) if method == "POST" else "meta"
        if stage in self.sequence_stages:
            with self._lock:
                asked = self._asked[(label, key)]
                occurrence = asked - 1 if client_retry and asked else asked
                self._asked[(label, key)] = occurrence + 1
            key = sequenced_key(key, occurrence)
        else:
            occurrence = 0
        with self._key_locks[key]:  # the same body twice in flight: the upstream sees it once
            entry = self.entries.get(key)
            hit = entry is not None
            if entry is None:
                if self.mode == "replay":
                    self._log(label, key, stage, method, path, body, "miss", None, client_retry)
                    with self._lock:
                        self.stats.misses += 1
                    return 404, _error(f"record proxy (replay): no recorded reply for {method} {path} "
                                       f"key {key[:16]} in {self.recording}")
                status, reply, delay_s = self._forward(method, path, self._upstream_body(body, raw_body))
                if status >= 500 or status == 429:  # transient: do not freeze an outage into the recording
                    with self._lock:
                        self.stats.upstream_errors += 1
                    self._log(label, key, stage, method, path, body, "upstream_error", None, client_retry)
                    return status, json.dumps(reply).encode("utf-8")
                stored = hash_messages(body) if self.digest_messages else body
                entry = {"key": key, "method": method, "path": path, "body": stored, "status": status,
                         "reply": reply, "stage": stage}
                if occurrence:
                    entry["occurrence"] = occurrence
                if delay_s:  # held upstream on purpose: a replay holds it again
                    entry["delay_s"] = delay_s
                with self._lock:
                    _append_line(self.recording, entry)
                    self.entries[key] = entry
        with self._lock:
            if hit:
                self.stats.hits += 1
            else:
                self.stats.misses += 1
            self.stats.by_label_stage[(label, stage)] += 1
        usage = entry["reply"].get("usage") if isinstance(entry["reply"], dict) else None
        self._log(label, key, stage, method, path, body, "hit" if hit else "recorded", usage, client_retry)
        if hit and entry.get("delay_s"):  # outside the key lock: other clients' askings are not queued
            t0 = time.monotonic()
            hold(float(entry["delay_s"]))
            with self._lock:
                self.stats.held_s.append(round(time.monotonic() - t0, 2))
        return int(entry["status"]), json.dumps(entry["reply"], ensure_ascii=False).encode("utf-8")

    def _upstream_body(self, body: Any, raw_body: bytes) -> bytes:
        if (self.default_max_tokens is None or not isinstance(body, dict) or "messages" not in body
                or body.get("max_tokens") is not None or body.get("max_completion_tokens") is not None):
            return raw_body
        with self._lock:
            self.capped += 1
        return json.dumps({**body, "max_tokens": self.default_max_tokens}).encode("utf-8")

    def _forward(self, method: str, path: str, raw_body: bytes) -> tuple[int, Any, float]:
        """(status, reply, the delay the upstream says it held the reply for: 0 when none)."""
        assert self.upstream is not None
        req = urllib.request.Request(self.upstream + path, data=raw_body if method == "POST" else None,
                                     method=method, headers={"Content-Type": "application/json"})
        delay_s = 0.0
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                status, data = resp.status, resp.read()
                delay_s = _seconds(resp.headers.get(REPLY_DELAY_HEADER))
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read()
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            return 502, {"error": {"message": f"record proxy: upstream {self.upstream} failed: {exc}"}}, 0.0
        try:
            return status, json.loads(data), delay_s
        except json.JSONDecodeError:
            return status, {"error": {"message": data.decode("utf-8", "replace")[:2000]}}, delay_s

    def _log(self, label: str, key: str, stage: str, method: str, path: str, body: Any,
             outcome: str, usage: Any, client_retry: int = 0) -> None:
        if self.request_log is None:
            return
        with self._lock:
            self._seq += 1
            _append_line(self.request_log, {"seq": self._seq, "label": label, "key": key, "stage": stage,
                                            "method": method, "path": path, "outcome": outcome,
                                            "usage": usage, "client_retry": client_retry, "body": body})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    # the OpenAI SDK's resend count, or ours
                    retry = self.headers.get("x-stainless-retry-count") or self.headers.get(RESEND_HEADER) or "0"
                    status, data = proxy.handle(method, self.path, raw,
                                                client_retry=int(retry) if retry.isdigit() else 0,
                                                hold=self._hold)
                except Exception as exc:  # noqa: BLE001 - a proxy bug must reach the client, not hang it
                    status, data = 500, _error(f"record proxy: {type(exc).__name__}: {exc}")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout); the reply is recorded all the same

            def _hold(self, seconds: float) -> None:
                """Wait ``seconds``, or less when the client hangs up (its socket reads as closed)."""
                end = time.monotonic() + seconds
                while (left := end - time.monotonic()) > 0:
                    readable, _, _ = select.select([self.connection], [], [], min(left, 0.2))
                    if not readable:
                        continue
                    try:
                        if not self.connection.recv(1, socket.MSG_PEEK):
                            return  # closed: nobody waits for this reply
                    except OSError:
                        return
                    time.sleep(min(left, 0.2))  # bytes of a next request: not a hang-up

            def do_POST(self) -> None:
                self._serve("POST")

            def do_GET(self) -> None:
                self._serve("GET")

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


def _seconds(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "record_proxy"}}).encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    """``python -m atomicrag.llm.record_proxy --upstream URL --recording FILE [--port N]``."""
    import argparse
    import time

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", help="the LLM server, http://host:port")
    ap.add_argument("--recording", required=True, help="JSONL of recorded replies (read, then appended)")
    ap.add_argument("--request-log", help="JSONL of every request seen (label, stage, key, body)")
    ap.add_argument("--mode", choices=("record", "replay"), default="record")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--stage-rules", help="JSON object: stage name → regex searched in the first message")
    ap.add_argument("--default-max-tokens", type=int, help="cap sent upstream when a request sets none")
    args = ap.parse_args(argv)
    rules = json.loads(args.stage_rules) if args.stage_rules else None
    proxy = RecordProxy(args.recording, upstream=args.upstream, mode=args.mode, host=args.host,
                        port=args.port, request_log=args.request_log, stage_rules=rules,
                        default_max_tokens=args.default_max_tokens).start()
    print(f"record proxy on {proxy.url} ({args.mode}, {len(proxy.entries)} recorded)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        proxy.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
