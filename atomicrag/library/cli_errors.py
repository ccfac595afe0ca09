"""How the ``atomicrag`` command reports a failure: one line on stderr, a fixed exit status.

A CLI user gets one line that says what failed and where (the file, the config key), never a
Python traceback; ``--debug`` shows the traceback as well. Exit status 2 for every failure the
command stops on (bad input, bad config, damaged files, full or read-only disks, failed models),
130 for Ctrl-C (the shell's convention for SIGINT).
"""
from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EXIT_FAILURE = 2
EXIT_INTERRUPTED = 130

# OS errors a user can act on, with what to do; the path comes from the exception itself
_OS_HINTS = {
    errno.ENOSPC: "no space left on the device; free some space or write elsewhere",
    errno.EDQUOT: "disk quota exceeded; free some space or write elsewhere",
    errno.EROFS: "the file system is read-only; write elsewhere",
    errno.EACCES: "permission denied; check the folder's owner and mode",
    errno.EPERM: "operation not permitted; check the folder's owner and mode",
    errno.EMFILE: "too many open files; raise the limit (ulimit -n)",
}


class IndexWriteError(RuntimeError):
    """Writing an index folder failed at the OS level; the folder is left as it was."""


@contextmanager
def writing_index(path: str | Path) -> Iterator[None]:
    """OS errors while updating the index at ``path`` say which index and that it is unchanged
    (saves are atomic: the old version stays until the new one is complete)."""
    try:
        yield
    except OSError as exc:
        if exc.errno is None:  # the CLI's own "does not exist" messages are complete already
            raise
        raise IndexWriteError(f"could not write the index {path}; it was not changed") from exc


def _one_line(text: str) -> str:
    """Several lines joined with '; ' (a message keeps its content, the report stays one line)."""
    parts = [p.strip() for p in str(text).splitlines() if p.strip()]
    return "; ".join(parts)


def _os_error_line(exc: OSError) -> str | None:
    """``OSError`` with an errno: what happened, the path(s) and what to do."""
    if exc.errno is None:
        return None
    paths = [p for p in (exc.filename, exc.filename2) if p is not None]
    where = " -> ".join(os.fsdecode(p) for p in paths)
    what = _OS_HINTS.get(exc.errno) or (exc.strerror or os.strerror(exc.errno))
    return f"{where}: {what}" if where else what


def _find_os_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` with an errno behind ``exc`` (the library often wraps it in its own error)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.errno is not None:
            return cur
        # an explicit cause, or the error being handled when this one was raised (unless hidden)
        cur = cur.__cause__ or (None if cur.__suppress_context__ else cur.__context__)
    return None


def error_line(exc: BaseException) -> str:
    """The one-line message of ``exc`` for a CLI user (without the ``atomicrag: error:`` prefix)."""
    if isinstance(exc, KeyError) and exc.args:  # str(KeyError) quotes its message
        return _one_line(str(exc.args[0]))
    os_exc = _find_os_error(exc)
    if os_exc is not None:
        detail = _os_error_line(os_exc)
        own = _one_line(str(exc)) if exc is not os_exc else ""
        if detail and own and detail not in own:  # the library's context (e.g. "saving index X") first
            return f"{own} ({detail})"
        return detail or own
    msg = _one_line(str(exc))
    if isinstance(exc, (ValueError, RuntimeError, LookupError, OSError)) and msg:
        return msg
    # anything else is a fault of the program, not of the input: say so, and how to see more
    return f"internal error: {type(exc).__name__}: {msg} (rerun with --debug for the traceback)"


def report(exc: BaseException, *, debug: bool) -> int:
    """Print ``exc`` as the CLI reports failures and return the exit status to use."""
    if isinstance(exc, KeyboardInterrupt):
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        print("atomicrag: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"atomicrag: error: {error_line(exc)}", file=sys.stderr)
    return EXIT_FAILURE
