"""Progress that counts real work, wherever it happens.

Work is counted where it is done, and shown by whoever owns the batch:

- ``advance(unit, n)``: a worker reports ``n`` units finished: an encoder after each batch of
  texts (``unit="text"``), an LLM backend after each request (``unit="request"``). With no
  task of that unit open it does nothing, so workers call it unconditionally.
- ``task(stage, total, unit)``: the owner of a batch (embedding the atoms, one LLM batch over
  the questions) opens a task; every ``advance`` of its unit moves it, and it reports
  ``(stage, done, total)`` to the current sink. At the end it tops up to ``total``, so a
  backend that cannot report (your own embedder, a bare ``chat()`` object) still completes the
  bar, in one step.
- ``reporting(sink)``: who sees it. The library installs its ``progress=`` setting (a callback,
  tqdm bars, or ``None`` for silence) for the duration of a call; with nothing installed (the
  harness, scripts), tqdm bars on stderr unless ``ATOMICRAG_NO_PROGRESS`` is set.

State is process-wide (not per thread) on purpose: LLM requests finish on worker threads.
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Sink = Callable[[str, int, int], None]
ProgressFn = Sink  # a user's progress callback: (stage, done, total)

_lock = threading.RLock()
_tasks: list[Task] = []
_sinks: list[Sink | None] = []
_default_bars: Any = None


class Task:
    """One batch of work: ``done`` of ``total`` units, reported to ``sink`` as it moves."""

    def __init__(self, stage: str, total: int, unit: str, sink: Sink | None, parent: Task | None = None) -> None:
        self.stage, self.total, self.unit, self.sink = stage, int(total), unit, sink
        self.parent = parent  # an open task of the same unit this one is part of (it shows the bar)
        self.done = 0

    def advance(self, n: int = 1) -> None:
        with _lock:
            before = self.done
            self.done = min(self.total, self.done + int(n))
            done = self.done
        if self.parent is not None and done != before:
            self.parent.advance(done - before)  # one bar per stage: the part moves the whole
        if self.sink is not None and done != before:
            self.sink(self.stage, done, self.total)

    def settle(self, upto: int) -> None:
        """At least ``upto`` units are done (a caller that knows; counts nothing twice)."""
        if upto > self.done:
            self.advance(upto - self.done)


def advance(unit: str, n: int = 1) -> None:
    """``n`` units of ``unit`` finished: moves the innermost open task of that unit, if any."""
    with _lock:
        found = next((t for t in reversed(_tasks) if t.unit == unit), None)
    if found is not None:
        found.advance(n)


def _default_sink() -> Sink | None:
    global _default_bars
    if not progress_enabled(None):
        return None
    with _lock:
        if _default_bars is None:
            _default_bars = Progress(True)
        return _default_bars


def current_sink() -> Sink | None:
    with _lock:
        if _sinks:
            return _sinks[-1]
    return _default_sink()


@contextmanager
def task(stage: str, total: int, unit: str) -> Iterator[Task]:
    """Open a task of ``total`` units; on normal exit it is complete (``done == total``).

    Inside an open task of the same unit (a caching embedder's batch of misses inside "embed the
    atoms") it is a part of that task: no bar of its own, its units move the outer one."""
    with _lock:
        outer = next((o for o in reversed(_tasks) if o.unit == unit), None)
        t = Task(stage, total, unit, None if outer is not None or total <= 0 else current_sink(), parent=outer)
        _tasks.append(t)
    if t.sink is not None:
        t.sink(stage, 0, t.total)
    ok = False
    try:
        yield t
        ok = True
    finally:
        with _lock:
            _tasks.remove(t)
        if ok:
            t.settle(t.total)


@contextmanager
def reporting(sink: Sink | None) -> Iterator[None]:
    """Send the progress of tasks opened inside the block to ``sink`` (None: silence)."""
    with _lock:
        _sinks.append(sink)
    try:
        yield
    finally:
        with _lock:
            _sinks.pop()


def progress_enabled(progress: bool | None) -> bool:
    """Progress bars on by default, off when asked or when ATOMICRAG_NO_PROGRESS is set."""
    if progress is not None:
        return progress
    return not os.environ.get("ATOMICRAG_NO_PROGRESS")


class Progress:
    """Reports ``(stage, done, total)`` to a user callback, or as tqdm bars on stderr.

    ``spec``: a callable (called, no bars), True (bars), False (silent) or None (bars when
    stderr is a terminal).
    """

    def __init__(self, spec: bool | ProgressFn | None) -> None:
        self.callback: ProgressFn | None = spec if callable(spec) else None
        if spec is None:
            spec = sys.stderr.isatty()
        self.bars = bool(spec) and self.callback is None
        self._bars: dict[str, Any] = {}

    @property
    def active(self) -> bool:
        return self.callback is not None or self.bars

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.callback is not None:
            self.callback(stage, done, total)
        elif self.bars:
            from tqdm.auto import tqdm

            bar = self._bars.get(stage)
            if bar is None:
                bar = self._bars[stage] = tqdm(total=total, desc=stage, file=sys.stderr, leave=False,
                                               dynamic_ncols=True)
            bar.total = total
            bar.n = done
            bar.refresh()
            if done >= total:
                bar.close()
                del self._bars[stage]

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


@contextmanager
def no_loading_bars() -> Iterator[None]:
    """No "Loading weights" bar from transformers while a model loads (a local model loads in a
    second; the bar is noise beside the stage bars that follow), restored after."""
    if "transformers" not in sys.modules:
        try:
            import transformers  # noqa: F401 - the caller is about to load a model with it
        except ImportError:
            yield
            return
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


_QUIET_ENV = {"ATOMICRAG_NO_PROGRESS": "1", "TQDM_DISABLE": "1",  # tqdm >= 4.66 reads TQDM_* defaults
              "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error",
              "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}


@contextmanager
def silence_libraries() -> Iterator[None]:
    """No bar or banner from the libraries underneath either (``atomicrag -q``), inside the block.

    Our own bars follow ``progress``; transformers draws a "Loading weights" bar and the hub its
    download bars regardless, and other libraries' tqdm bars honour only their own switches. The
    variables also reach worker processes; transformers and the hub, which read them once at
    import, are switched directly. Everything is restored on exit (the CLI runs in-process in tests).
    """
    saved = {k: os.environ.get(k) for k in _QUIET_ENV}
    os.environ.update(_QUIET_ENV)
    undo: list[Any] = []
    # modules imported later read the variables; those already imported are switched here (not
    # imported for it: `atomicrag -q docs` loads no model and should not pay for transformers)
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        if hf_logging.is_progress_bar_enabled():
            undo.append(hf_logging.enable_progress_bar)
        level = hf_logging.get_verbosity()
        undo.append(lambda: hf_logging.set_verbosity(level))
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import (
            are_progress_bars_disabled,
            disable_progress_bars,
            enable_progress_bars,
        )

        if not are_progress_bars_disabled():
            undo.append(enable_progress_bars)
        disable_progress_bars()
    try:
        yield
    finally:
        for fn in undo:
            fn()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
