"""A recording, replaying OpenAI-compatible HTTP proxy in front of one LLM server.

Two pipelines (ours and the released code) talk to one model through this proxy. Every request
body is keyed by its canonical JSON (keys sorted, no whitespace, UTF-8 kept), so two clients that
send the same body byte-for-byte-equivalent get the *same* reply — the first one the server gave —
and any downstream difference between the pipelines is pipeline logic, not sampling noise.

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
the key, which is always the hash of the whole body as sent; the request log (a work file) keeps
the full bodies for the first-difference report.

Stages are named by prompt prefix: ``stage_rules`` maps a name to a regular expression searched in
the first message's content (the system prompt, or the user turn when there is none); the first
rule that matches names the stage, else the stage is ``other``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

LABEL_PREFIX = re.compile(r"^/c/([A-Za-z0-9_.-]+)(/.*)$")


class RecordingError(ValueError):
    """A recording file that cannot be read back (bad JSON, missing fields)."""


def canonical_json(obj: Any) -> str:
    """The key text of a request body: sorted keys, compact separators, non-ASCII kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(method: str, path: str, body: Any) -> str:
    """sha256 of method, path (without the label prefix) and the canonical body."""
    text = f"{method.upper()} {path}\n{canonical_json(body)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_digest(content: Any) -> dict[str, str]:
    """What a hashed recording keeps of one message content: its sha256 (of the canonical JSON)."""
    return {"sha256": hashlib.sha256(canonical_json(content).encode("utf-8")).hexdigest()}


def hash_messages(body: Any) -> Any:
    """``body`` with each chat message's content (and a completion prompt) replaced by its digest;
    two bodies with equal messages still have equal hashed messages."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    if isinstance(body.get("messages"), list):
        out["messages"] = [{**m, "content": content_digest(m.get("content"))} if isinstance(m, dict) else m
                           for m in body["messages"]]
    if "prompt" in body:
        out["prompt"] = content_digest(body["prompt"])
    return out


def first_message_text(body: Any) -> str:
    """The first chat message's text (or a completion prompt); '' when the body has neither."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        content = messages[0].get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):  # OpenAI content parts
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    prompt = body.get("prompt")
    return prompt if isinstance(prompt, str) else ""


def classify_stage(body: Any, rules: list[tuple[str, re.Pattern[str]]]) -> str:
    """The first rule whose pattern is found in the first message names the stage; else ``other``."""
    text = first_message_text(body)
    for name, pattern in rules:
        if pattern.search(text):
            return name
    return "other"


def compile_rules(rules: dict[str, str] | list[tuple[str, str]] | None) -> list[tuple[str, re.Pattern[str]]]:
    items = list(rules.items()) if isinstance(rules, dict) else list(rules or [])
    return [(name, re.compile(pattern)) for name, pattern in items]


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
            entries.setdefault(entry["key"], entry)  # the first reply given is the one replayed
    return entries


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


class RecordProxy:
    """The proxy server. ``start()`` serves on a thread; ``url`` is its base (without /v1)."""

    def __init__(self, recording: str | Path, *, upstream: str | None = None, mode: str = "record",
                 host: str = "127.0.0.1", port: int = 0, request_log: str | Path | None = None,
                 stage_rules: dict[str, str] | list[tuple[str, str]] | None = None,
                 timeout_s: float = 1800.0, default_max_tokens: int | None = None,
                 digest_messages: bool = False) -> None:
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
        self.rules = compile_rules(stage_rules)
        self.entries = load_recording(self.recording)
        self.stats = ProxyStats()
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._seq = 0
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
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
    def handle(self, method: str, raw_path: str, raw_body: bytes) -> tuple[int, bytes]:
        """Answer one request: (HTTP status, JSON reply bytes)."""
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
        with self._key_locks[key]:  # the same body twice in flight: the upstream sees it once
            entry = self.entries.get(key)
            hit = entry is not None
            if entry is None:
                if self.mode == "replay":
                    self._log(label, key, stage, method, path, body, "miss", None)
                    with self._lock:
                        self.stats.misses += 1
                    return 404, _error(f"record proxy (replay): no recorded reply for {method} {path} "
                                       f"key {key[:16]} in {self.recording}")
                status, reply = self._forward(method, path, self._upstream_body(body, raw_body))
                if status >= 500 or status == 429:  # transient: do not freeze an outage into the recording
                    with self._lock:
                        self.stats.upstream_errors += 1
                    self._log(label, key, stage, method, path, body, "upstream_error", None)
                    return status, json.dumps(reply).encode("utf-8")
                stored = hash_messages(body) if self.digest_messages else body
                entry = {"key": key, "method": method, "path": path, "body": stored, "status": status,
                         "reply": reply, "stage": stage}
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
        self._log(label, key, stage, method, path, body, "hit" if hit else "recorded", usage)
        return int(entry["status"]), json.dumps(entry["reply"], ensure_ascii=False).encode("utf-8")

    def _upstream_body(self, body: Any, raw_body: bytes) -> bytes:
        if (self.default_max_tokens is None or not isinstance(body, dict) or "messages" not in body
                or body.get("max_tokens") is not None or body.get("max_completion_tokens") is not None):
            return raw_body
        with self._lock:
            self.capped += 1
        return json.dumps({**body, "max_tokens": self.default_max_tokens}).encode("utf-8")

    def _forward(self, method: str, path: str, raw_body: bytes) -> tuple[int, Any]:
        assert self.upstream is not None
        req = urllib.request.Request(self.upstream + path, data=raw_body if method == "POST" else None,
                                     method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                status, data = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read()
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            return 502, {"error": {"message": f"record proxy: upstream {self.upstream} failed: {exc}"}}
        try:
            return status, json.loads(data)
        except json.JSONDecodeError:
            return status, {"error": {"message": data.decode("utf-8", "replace")[:2000]}}

    def _log(self, label: str, key: str, stage: str, method: str, path: str, body: Any,
             outcome: str, usage: Any) -> None:
        if self.request_log is None:
            return
        with self._lock:
            self._seq += 1
            _append_line(self.request_log, {"seq": self._seq, "label": label, "key": key, "stage": stage,
                                            "method": method, "path": path, "outcome": outcome,
                                            "usage": usage, "body": body})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    status, data = proxy.handle(method, self.path, raw)
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

            def do_POST(self) -> None:
                self._serve("POST")

            def do_GET(self) -> None:
                self._serve("GET")

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "record_proxy"}}).encode("utf-8")


# -- comparing what two clients sent ------------------------------------------------------------
def read_request_log(path: str | Path) -> list[dict[str, Any]]:
    """The entries of a request log (one JSON object per line; a bad line names the file and line)."""
    from atomicrag.core.artifacts import read_jsonl

    return read_jsonl(path)


def first_difference(a: Any, b: Any, where: str = "$", window: int = 60) -> str | None:
    """A short path and values of the first place two JSON values differ; None when equal. Strings
    are shown ``window`` characters either side of the first differing character (a report that is
    committed keeps this short: the texts may be prompts that are not ours to store)."""
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'second' if k not in a else 'first'}"
            d = first_difference(a[k], b[k], f"{where}.{k}", window)
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}[{i}]", window)
            if d:
                return d
        return None if len(a) == len(b) else f"{where}: length {len(a)} vs {len(b)}"
    if a != b:
        if isinstance(a, str) and isinstance(b, str):
            i = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            lo = max(0, i - window)
            return f"{where} @char {i}: {a[lo:i + window]!r} vs {b[lo:i + window]!r}"
        return f"{where}: {a!r} vs {b!r}"
    return None


def compare_labels(entries: list[dict[str, Any]], first: str, second: str, window: int = 60) -> dict[str, Any]:
    """Per stage: requests each label sent, bodies both sent (multiset), each label's extra ones,
    the first differing pair (the n-th unmatched body of each side, in send order), and tokens."""
    by: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: {first: [], second: []})
    for e in entries:
        if e.get("method") == "POST" and e.get("label") in (first, second):
            by[e["stage"]][e["label"]].append(e)
    report: dict[str, Any] = {}
    for stage in sorted(by):
        a, b = by[stage][first], by[stage][second]
        ca, cb = Counter(e["key"] for e in a), Counter(e["key"] for e in b)
        common = sum((ca & cb).values())
        only_a = [e for e in a if not _take(ca, cb, e["key"])]
        ca, cb = Counter(e["key"] for e in a), Counter(e["key"] for e in b)
        only_b = [e for e in b if not _take(cb, ca, e["key"])]
        diff = None
        if only_a and only_b:
            diff = first_difference(only_a[0]["body"], only_b[0]["body"], window=window)
        elif only_a or only_b:
            diff = f"only {first if only_a else second} sent {len(only_a or only_b)} more request(s)"
        # the messages alone (sampling parameters aside): is the prompt the same, only the settings not?
        ma, mb = Counter(_messages_key(e) for e in a), Counter(_messages_key(e) for e in b)
        messages_equal = sum((ma & mb).values())
        param_diff = None
        fields: set[str] = set()  # top-level body fields that differ where the messages are the same
        by_msg = {_messages_key(e): e for e in b}
        for e in a:
            other = by_msg.get(_messages_key(e))
            if other is not None and other["key"] != e["key"]:
                param_diff = param_diff or first_difference(e["body"], other["body"], window=window)
                x, y = e["body"], other["body"]
                fields |= {k for k in set(x) | set(y) if k != "messages" and x.get(k) != y.get(k)}
        report[stage] = {
            f"n_{first}": len(a), f"n_{second}": len(b), "equal": common, "messages_equal": messages_equal,
            "first_parameter_difference": param_diff, "differing_parameters": sorted(fields),
            f"only_{first}": len(only_a), f"only_{second}": len(only_b), "first_difference": diff,
            f"tokens_{first}": _tokens(a), f"tokens_{second}": _tokens(b),
        }
    return report


def _messages_key(entry: dict[str, Any]) -> str:
    body = entry.get("body")
    msgs = body.get("messages", body.get("prompt")) if isinstance(body, dict) else body
    return canonical_json(msgs)


def _take(mine: Counter, theirs: Counter, key: str) -> bool:
    """Match one occurrence of ``key`` against the other side; False when nothing is left to match."""
    if theirs[key] > 0:
        theirs[key] -= 1
        return True
    return False


def _tokens(entries: list[dict[str, Any]]) -> dict[str, int]:
    p = sum(int((e.get("usage") or {}).get("prompt_tokens") or 0) for e in entries)
    c = sum(int((e.get("usage") or {}).get("completion_tokens") or 0) for e in entries)
    return {"prompt": p, "completion": c}


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
