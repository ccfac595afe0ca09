"""Per-module token and time accounting (paper Tables 4 and 7).

Every LLM batch is recorded under ``ChatRequest.module`` (e.g. "atomize", "decompose",
"sieve", "reader"); pipeline stages add their wall time with ``accountant.time(module)``.
Cache hits count as calls with 0 new tokens; the tokens they would have cost are kept in
``cached_prompt_tokens``/``cached_completion_tokens`` so a fresh run's cost can be reported.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from atomicrag.core import progress
from atomicrag.core.gpu_memory import oom_names_stage
from atomicrag.llm.protocol import ChatRequest, ChatResult, LLMBackend

if TYPE_CHECKING:
    from typing_extensions import Self


@dataclass
class ModuleStats:
    calls: int = 0  # requests (not attempts)
    failures: int = 0  # requests whose result has error set, except replies cut at max_tokens
    # replies the backend stopped at the request's max_tokens (finish_reason "length"): a budget the
    # config chose cut them, which is reported here, not as an LLM failure (the caller decides
    # what a cut reply means for its question: the reader keeps what was written)
    cut: int = 0
    cached_calls: int = 0
    attempts: int = 0  # generation attempts, retries included
    errored_attempts: int = 0  # of which ended without a reply (timeout, HTTP error): no tokens reported
    prompt_tokens: int = 0  # new tokens only
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    llm_latency_s: float = 0.0  # sum of per-request latencies (requests overlap: > wall time)
    wall_s: float = 0.0  # from accountant.time(module)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: ModuleStats) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "total_tokens": self.total_tokens}


class Accountant:
    """Thread-safe per-module counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats: dict[str, ModuleStats] = {}

    def _get(self, module: str) -> ModuleStats:
        stats = self._stats.get(module)
        if stats is None:
            stats = self._stats[module] = ModuleStats()
        return stats

    def record(self, module: str, results: list[ChatResult]) -> None:
        """Add a batch of results to ``module``."""
        with self._lock:
            s = self._get(module)
            for r in results:
                s.calls += 1
                cut = r.finish_reason == "length"
                s.cut += 1 if cut else 0
                s.failures += 0 if r.ok or cut else 1
                s.cached_calls += 1 if r.cached else 0
                s.attempts += r.attempts
                s.errored_attempts += r.errored_attempts
                s.prompt_tokens += r.prompt_tokens
                s.completion_tokens += r.completion_tokens
                s.cached_prompt_tokens += r.cached_prompt_tokens
                s.cached_completion_tokens += r.cached_completion_tokens
                s.llm_latency_s += r.latency_s

    def add_time(self, module: str, seconds: float) -> None:
        with self._lock:
            self._get(module).wall_s += seconds

    @contextmanager
    def time(self, module: str) -> Iterator[None]:
        """``with accountant.time("sieve"): ...`` adds the block's wall time to the module."""
        t0 = time.perf_counter()
        try:
            with oom_names_stage(module):  # a CUDA OOM names this stage and its setting
                yield
        finally:
            self.add_time(module, time.perf_counter() - t0)

    def stats(self, module: str) -> ModuleStats:
        with self._lock:
            return dataclasses.replace(self._get(module))

    def modules(self) -> list[str]:
        with self._lock:
            return sorted(self._stats)

    def total(self) -> ModuleStats:
        out = ModuleStats()
        with self._lock:
            for s in self._stats.values():
                out.add(s)
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"modules": {name: stats}, "total": stats}`` (JSON-ready)."""
        with self._lock:
            modules = {k: v.to_dict() for k, v in sorted(self._stats.items())}
        return {"modules": modules, "total": self.total().to_dict()}

    def reset(self) -> None:
        with self._lock:
            self._stats.clear()


# LLM modules whose callers show their own progress (the atomizers count chunks).
_OWN_PROGRESS = frozenset({"atomize"})


def batch_progress(requests: list[ChatRequest]) -> Any:
    """One progress task per LLM batch (e.g. ``answer``: one unit per question), moved by the
    backends as requests finish (``progress.advance("request")``)."""
    modules = {r.module for r in requests}
    stage = modules.pop() if len(modules) == 1 else "llm"
    if stage in _OWN_PROGRESS or not requests:
        return nullcontext()
    return progress.task(stage, len(requests), unit="request")


class AccountedLLM:
    """``LLMBackend`` wrapper that records every batch, split by ``ChatRequest.module``."""

    def __init__(self, backend: LLMBackend, accountant: Accountant) -> None:
        self.backend = backend
        self.accountant = accountant
        self.model = backend.model

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        with batch_progress(requests):
            results = self.backend.chat(requests)
        by_module: dict[str, list[ChatResult]] = {}
        for req, res in zip(requests, results):
            by_module.setdefault(req.module, []).append(res)
        for module, group in by_module.items():
            self.accountant.record(module, group)
        return results

    def stream(self, request: ChatRequest) -> Generator[str, None, ChatResult]:
        """Stream one request through the backend (``answer.streaming.stream_chat``), recorded as a batch of one."""
        from atomicrag.llm.streaming import stream_chat

        result = yield from stream_chat(self.backend, request)
        self.accountant.record(request.module, [result])
        return result

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
