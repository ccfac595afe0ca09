"""SQLite cache in front of any backend: re-running an experiment costs no LLM calls.

Key = sha256 of (model, messages, temperature, max_tokens, seed, schema). Sampled calls
without a seed (temperature > 0 and seed None) are never cached: their answer is meant to
vary. Only successful results are stored, so a failure is retried on the next run.

Concurrency: WAL mode (readers never block the writer), ``busy_timeout`` so writers wait
for each other instead of failing, one connection per thread (and per process: a forked
child opens its own), and each write is one short ``INSERT OR REPLACE`` transaction.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atomicrag.core import progress
from atomicrag.core.artifacts import move_aside
from atomicrag.llm.protocol import ChatRequest, ChatResult, LLMBackend

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger(__name__)
_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    parsed TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""
_BUSY_TIMEOUT_MS = 60_000
_SELECT_CHUNK = 500  # keys per lookup statement
# One constant, fully parameterised statement: the keys travel as a JSON array in one parameter.
_GET_SQL = ("SELECT key, model, text, parsed, prompt_tokens, completion_tokens FROM llm_cache "
            "WHERE key IN (SELECT value FROM json_each(?))")


# SQLite's result codes for a file whose content is not a (whole) database
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


class LLMCacheDamagedError(RuntimeError):
    """The LLM cache file is damaged in a way found only in the middle of a run."""


class LLMCacheIOError(RuntimeError):
    """The LLM cache file cannot be opened, read or written (a full or read-only disk, an I/O error)."""


def is_damaged(exc: BaseException) -> bool:
    """Whether a SQLite error says the file's content is damaged (not busy, locked or missing)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def cache_key(model: str, request: ChatRequest) -> str:
    fields = {
        "model": model,
        "messages": request.messages,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "schema": request.schema,
    }
    if request.continue_reply:  # only when set: the keys of every other request stay as they were
        fields["continue_reply"] = True
    if request.accept_empty:  # a cached "" is an answer only to a request that accepts one
        fields["accept_empty"] = True
    if request.attempt:  # a retry of the same request is its own call
        fields["attempt"] = request.attempt
    if request.frequency_penalty:  # the same: a reply made without the penalty is not this one's
        fields["frequency_penalty"] = request.frequency_penalty
    blob = json.dumps(
        fields,
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def is_cacheable(request: ChatRequest) -> bool:
    return not (request.temperature > 0 and request.seed is None)


class CacheProbe:
    """Counts how many of some requests the LLM cache file of a run config already answers, before
    the run (the run plan's cached calls): read-only; a missing or unreadable file has no hits."""

    def __init__(self, cfg: Any) -> None:
        self.key_model = f"{cfg.llm.name}:{cfg.llm.model}:{cfg.llm.model_path or ''}"
        path = Path(cfg.paths.llm_cache)
        self.conn: sqlite3.Connection | None = None
        if cfg.llm.cache and path.is_file():
            try:
                self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                self.conn.execute("SELECT 1 FROM llm_cache LIMIT 1")
            except sqlite3.DatabaseError:
                self.conn = None

    def hits(self, requests: list[ChatRequest]) -> int:
        if self.conn is None or not requests:
            return 0
        keys = [cache_key(self.key_model, r) for r in requests]
        found = 0
        for i in range(0, len(keys), 500):  # the keys go in as one JSON parameter: no SQL is built
            part = json.dumps(keys[i:i + 500])
            found += self.conn.execute("SELECT COUNT(*) FROM llm_cache WHERE key IN (SELECT value FROM json_each(?))",
                                       (part,)).fetchone()[0]
        return found

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


class CachedLLM:
    """``LLMBackend`` wrapper: serves repeated requests from SQLite, forwards the rest."""

    def __init__(self, backend: LLMBackend, path: str | Path, *, key_model: str | None = None,
                 config_key: str = "paths.llm_cache") -> None:
        self.backend = backend
        self.model = backend.model
        # What identifies the model in keys; the factory adds backend name and model file so two
        # backends that share a model name never share entries.
        self.key_model = key_model or backend.model
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        self._stats_lock = threading.Lock()
        self.config_key = config_key  # the setting that names the file, for messages
        self.moved_to: Path | None = None  # where a damaged file found at start was moved
        try:  # create the table now, so errors surface at construction
            self._check(self._connect())
        except sqlite3.DatabaseError as exc:
            if not is_damaged(exc):
                raise self._io_error(exc, "open") from exc
            # a half-written or garbage file: keep it aside for a look and start an empty cache
            self._forget_connection()
            self.moved_to = move_aside(self.path, "-wal", "-shm")
            log.warning("the LLM cache %s (%s) is damaged (%s); moved it to %s and starting an empty one "
                        "(earlier answers are asked again)", self.path, config_key, exc, self.moved_to)
            try:
                self._check(self._connect())
            except sqlite3.DatabaseError as again:
                raise self._io_error(again, "open") from again

    @staticmethod
    def _check(conn: sqlite3.Connection) -> None:
        # reads the table's whole key index: a damaged page in it is found now, not mid-run
        conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()

    def _forget_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def _damaged(self, exc: sqlite3.DatabaseError) -> LLMCacheDamagedError:
        """Damage found mid-run: the run stops with what to do (other threads still use the file)."""
        return LLMCacheDamagedError(
            f"the LLM cache {self.path} ({self.config_key}) is damaged ({exc}); move it aside "
            f"(mv {self.path} {self.path}.damaged) or set {self.config_key} to another file, then rerun: "
            "a new cache is started and the entries in the damaged one are asked again")

    def _io_error(self, exc: sqlite3.Error, doing: str) -> LLMCacheIOError:
        """A SQLite error that is not damage (a full disk gives "database or disk is full" or "disk
        I/O error", a read-only one "attempt to write a readonly database"): say which file and
        which setting places it, so the user can free space or move the cache."""
        return LLMCacheIOError(
            f"could not {doing} the LLM cache {self.path} ({self.config_key}): {exc}; is its disk full or "
            f"read-only? Free space there, or set {self.config_key} to a file on another disk "
            "(or llm.cache=false to run without the cache)")

    # ------------------------------------------------------------------ connections
    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        # timeout= is SQLite's busy timeout: writers from other processes are waited for
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        self._local.conn, self._local.pid = conn, os.getpid()  # set first: a damaged file's is closed
        for attempt in range(20):
            try:  # switching to WAL needs a brief exclusive lock; another process may hold it
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA_SQL)
                break
            except sqlite3.OperationalError as exc:
                if attempt == 19 or is_damaged(exc):
                    raise
                time.sleep(0.05 * (attempt + 1))
        return conn

    # ------------------------------------------------------------------ lookups and stores
    def get_many(self, keys: list[str]) -> dict[str, tuple[Any, ...]]:
        rows: dict[str, tuple[Any, ...]] = {}
        try:
            conn = self._connect()
            for i in range(0, len(keys), _SELECT_CHUNK):
                for row in conn.execute(_GET_SQL, (json.dumps(keys[i:i + _SELECT_CHUNK]),)):
                    rows[row[0]] = row
        except sqlite3.DatabaseError as exc:
            if is_damaged(exc):
                raise self._damaged(exc) from exc
            raise self._io_error(exc, "read") from exc
        return rows

    def put_many(self, items: list[tuple[str, ChatResult]]) -> None:
        if not items:
            return
        rows = [
            (k, r.model or self.model, r.text, json.dumps(r.parsed, ensure_ascii=False),
             r.prompt_tokens, r.completion_tokens, time.time())
            for k, r in items
        ]
        conn = self._connect()
        with conn:  # one short transaction (BEGIN ... COMMIT)
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT OR REPLACE INTO llm_cache "
                "(key, model, text, parsed, prompt_tokens, completion_tokens, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def __len__(self) -> int:
        try:
            return int(self._connect().execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            if is_damaged(exc):
                raise self._damaged(exc) from exc
            raise self._io_error(exc, "read") from exc

    # ------------------------------------------------------------------ LLMBackend
    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        t0 = time.perf_counter()
        keys = [cache_key(self.key_model, r) if is_cacheable(r) else None for r in requests]
        found = self.get_many(sorted({k for k in keys if k}))
        lookup_s = (time.perf_counter() - t0) / max(1, len(requests))
        results: list[ChatResult | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}  # identical cacheable requests in a batch run once
        uncached: list[int] = []
        for i, k in enumerate(keys):
            if k is None:
                uncached.append(i)
            elif k in found:
                results[i] = self._hit(found[k], lookup_s)
            else:
                todo.setdefault(k, []).append(i)
        order = [idx[0] for idx in todo.values()] + uncached
        progress.advance("request", len(requests) - len(order))  # hits (and in-batch duplicates) are done
        fresh = self.backend.chat([requests[i] for i in order]) if order else []
        to_store = []
        for i, res in zip(order, fresh):
            results[i] = res
            k = keys[i]
            if k is not None:
                for j in todo[k][1:]:
                    # Duplicates in one batch cost nothing new: report them as cache hits.
                    results[j] = self._as_hit(res, lookup_s) if res.ok else res
                # a reply cut at max_tokens is a counted failure of its caller (the reader): kept
                # out of the cache, so a re-run reports it again instead of reading it as a success
                if res.ok and res.finish_reason != "length":
                    to_store.append((k, res))
        try:
            self.put_many(to_store)
        except sqlite3.Error as exc:  # the answers are still good; only re-use is lost
            log.warning("LLM cache write to %s (%s) failed: %s", self.path, self.config_key, exc)
        with self._stats_lock:
            self.hits += sum(1 for r in results if r is not None and r.cached)
            self.misses += len(order)
        return [r for r in results if r is not None]

    def stream(self, request: ChatRequest) -> Generator[str, None, ChatResult]:
        """A cached reply comes whole; otherwise the backend's stream, stored as ``chat`` stores it."""
        from atomicrag.llm.streaming import stream_chat

        key = cache_key(self.key_model, request) if is_cacheable(request) else None
        row = self.get_many([key]).get(key) if key else None
        if row is not None:
            res = self._hit(row, 0.0)
            with self._stats_lock:
                self.hits += 1
            if res.text:
                yield res.text
            return res
        res = yield from stream_chat(self.backend, request)
        with self._stats_lock:
            self.misses += 1
        if key and res.ok and res.finish_reason != "length":
            try:
                self.put_many([(key, res)])
            except sqlite3.Error as exc:
                log.warning("LLM cache write to %s (%s) failed: %s", self.path, self.config_key, exc)
        return res

    @staticmethod
    def _hit(row: tuple[Any, ...], latency: float) -> ChatResult:
        _, model, text, parsed, p_tok, c_tok = row
        return ChatResult(
            text=text,
            parsed=json.loads(parsed) if parsed is not None else None,
            prompt_tokens=0,
            completion_tokens=0,
            cached=True,
            latency_s=latency,
            attempts=0,
            model=model,
            cached_prompt_tokens=p_tok,
            cached_completion_tokens=c_tok,
        )

    @staticmethod
    def _as_hit(res: ChatResult, latency: float) -> ChatResult:
        return ChatResult(
            text=res.text, parsed=json.loads(json.dumps(res.parsed)), cached=True, latency_s=latency,
            attempts=0, model=res.model, cached_prompt_tokens=res.prompt_tokens,
            cached_completion_tokens=res.completion_tokens, finish_reason=res.finish_reason,
        )

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
            self._local.conn = None
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
