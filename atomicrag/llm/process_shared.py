"""One launched LLM server per process, however many users build the same LLM config.

A vLLM server takes tens of seconds to start and holds its model in memory, so two
``AtomicRAG`` objects (or ``AtomicRAG.load`` calls) of one LLM config should not each start one.
``acquire`` keeps one backend per LLM config for the whole process and hands out *leases*; a
lease's ``close()`` gives it back, and the backend (with the server it launched) is closed when
the last lease is closed.
A later ``acquire`` of the same config after that builds a fresh one.

Only backends that launch something expensive are shared (``SHARED_NAMES``, without a
``base_url``): a client of a remote URL or the fake test LLM costs nothing to build, and a
user's own per-object settings stay per object.
"""
from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from typing import Any

from atomicrag.core.config import LLMConfig, PathsConfig
from atomicrag.llm.protocol import ChatRequest, ChatResult, LLMBackend

# llm.name values whose builder launches a local server process (see llm.backends)
SHARED_NAMES = frozenset({"vllm", "llamacpp"})

_LOCK = threading.Lock()
_SHARED: dict[str, _Entry] = {}


@dataclasses.dataclass
class _Entry:
    backend: LLMBackend
    users: int = 0


def shares(cfg: LLMConfig) -> bool:
    """Whether ``cfg`` builds a backend that launches a server (and so is shared per process)."""
    return cfg.name in SHARED_NAMES and not cfg.base_url and not cfg.base_urls


def share_key(cfg: LLMConfig, paths: PathsConfig) -> str:
    return json.dumps([dataclasses.asdict(cfg), dataclasses.asdict(paths)], sort_keys=True, default=str)


class Lease:
    """One user's hold on a shared backend: everything but ``close()`` goes to the backend."""

    def __init__(self, key: str, backend: LLMBackend) -> None:
        self._key = key
        self._backend = backend
        self._closed = False
        self._close_lock = threading.Lock()

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return self._backend.chat(requests)

    def close(self) -> None:
        """Give the backend back; the last lease closes it (stopping the server it launched).
        Closing twice is a no-op, so one user cannot stop a server another still uses."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        release(self._key)

    def __getattr__(self, name: str) -> Any:  # model, endpoint_stats(), server ... of the backend
        return getattr(self._backend, name)


def acquire(key: str, build: Callable[[], LLMBackend]) -> Lease:
    """A lease on the backend for ``key``, built by ``build()`` when no user holds one.

    The build runs under the lock on purpose: a second caller of the same config waits for the
    first server to come up instead of starting another one.
    """
    with _LOCK:
        entry = _SHARED.get(key)
        if entry is None:
            entry = _SHARED[key] = _Entry(build())
        entry.users += 1
        return Lease(key, entry.backend)


def release(key: str) -> None:
    with _LOCK:
        entry = _SHARED.get(key)
        if entry is None:
            return
        entry.users -= 1
        if entry.users > 0:
            return
        del _SHARED[key]
    entry.backend.close()  # outside the lock: stopping a vLLM server takes seconds


def users(key: str) -> int:
    """How many leases on ``key`` are open (0: no shared backend for it)."""
    with _LOCK:
        entry = _SHARED.get(key)
        return entry.users if entry else 0
