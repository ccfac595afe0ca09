"""One lock per ``AtomicRAG``: its public calls run one at a time."""
from __future__ import annotations

import functools
from typing import Any


def serialised(method: Any) -> Any:
    """Run ``method`` holding the object's lock: one AtomicRAG serves calls from several threads
    one at a time, so a query never sees an update half applied and per-call state on shared
    objects (the retriever's token counters, lazily built models) is never interleaved. A batch
    of questions in one ``query`` call is what runs in parallel (one propagation for all)."""
    @functools.wraps(method)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked
