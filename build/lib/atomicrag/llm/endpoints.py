"""Several replicas of one model behind one client: least-outstanding dispatch and failover.

Each attempt of a request goes to the live endpoint with the fewest requests in flight (ties:
the one sent fewer requests so far), so N data-parallel servers share a run's load even when
their speeds differ. An endpoint whose connection fails (refused, reset, closed mid-reply) is
marked down for ``revive_after_s`` (doubling with each consecutive failure, up to 5 min):
attempts go to the others meanwhile, then it is tried again (a restarted server rejoins). An
attempt lost to a dead replica does not use up one of the request's retries while another
replica is up (``OpenAIClient._run_one``). When every endpoint is down the least recently failed
one is tried anyway: the request's retries and backoff then decide, as with one server.

Per-endpoint counters (requests sent, replies, errors, tokens from the server's ``usage``)
let a caller check that the accounting of a run adds up across replicas.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class Endpoint:
    url: str  # base URL ending in /v1
    style: str  # structured-output dialect this server honours (see probe.py)
    context_window: int | None = None  # from the server when it says (vLLM's max_model_len)
    kind: str = "unknown"  # vllm | llama.cpp | llama-cpp-python | openai-compatible (after probing)
    outstanding: int = 0
    down_until: float = 0.0  # time.monotonic() before which the endpoint is skipped
    down_count: int = 0  # consecutive connection failures
    sent: int = 0  # HTTP requests sent
    replies: int = 0  # 2xx replies
    errors: int = 0  # transport errors, timeouts, HTTP errors
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def stats(self) -> dict[str, Any]:
        return {"url": self.url, "kind": self.kind, "sent": self.sent, "replies": self.replies,
                "errors": self.errors, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "down": self.down_until > time.monotonic()}


class EndpointPool:
    def __init__(self, urls: list[str], style: str, *, revive_after_s: float = 15.0) -> None:
        if not urls:
            raise ValueError("an LLM client needs at least one base URL")
        if len(set(urls)) != len(urls):
            raise ValueError(f"duplicate base URLs: {urls}")
        self.endpoints = [Endpoint(url=u, style=style) for u in urls]
        self.revive_after_s = revive_after_s
        self._lock = threading.Lock()  # chat() may run on several threads' event loops at once

    def acquire(self) -> Endpoint:
        """The endpoint for the next attempt; its ``outstanding`` count is raised until ``release``."""
        with self._lock:
            now = time.monotonic()
            live = [e for e in self.endpoints if e.down_until <= now]
            if live:
                ep = min(live, key=lambda e: (e.outstanding, e.sent))
            else:  # all down: the one that failed longest ago is the best bet
                ep = min(self.endpoints, key=lambda e: e.down_until)
            ep.outstanding += 1
            ep.sent += 1
            return ep

    def release(self, ep: Endpoint, *, ok: bool, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        with self._lock:
            ep.outstanding -= 1
            if ok:
                ep.replies += 1
                ep.prompt_tokens += prompt_tokens
                ep.completion_tokens += completion_tokens
                ep.down_until, ep.down_count = 0.0, 0
            else:
                ep.errors += 1

    def mark_down(self, ep: Endpoint, reason: str) -> None:
        with self._lock:
            was_up = ep.down_until <= time.monotonic()
            ep.down_count += 1
            ep.down_until = time.monotonic() + min(300.0, self.revive_after_s * 2 ** (ep.down_count - 1))
        if was_up and len(self.endpoints) > 1:
            log.warning("LLM endpoint %s is down (%s); sending to the other %d for %gs",
                        ep.url, reason, len(self.endpoints) - 1, self.revive_after_s)

    def any_other_live(self, ep: Endpoint) -> bool:
        now = time.monotonic()
        return any(e is not ep and e.down_until <= now for e in self.endpoints)

    def stats(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e.stats() for e in self.endpoints]
