"""Putting a newly written index folder in place of the old one without a moment with no index.

A save writes the new version into ``.NAME.tmp-PID`` beside ``NAME`` (its ``manifest.json`` last,
so a folder with a manifest is complete), then swaps it in:

- On Linux, ``renameat2(RENAME_EXCHANGE)`` swaps the two folders in one atomic step: ``NAME`` holds
  the old version or the new one, never nothing; the old version ends in the temporary folder,
  which is then deleted.
- Where the exchange is not supported (another OS, a file system without it), two renames:
  ``NAME -> .NAME.old-PID``, ``.NAME.tmp-PID -> NAME``. A writer killed between them leaves no
  ``NAME``, but two complete copies beside it; ``finish_interrupted_save`` (run by every load and
  save, under the index's write lock) moves the newer complete copy into place.

Leftover folders of killed writers are deleted only while ``NAME`` itself holds a complete index,
so the only complete copy of an index is never deleted.
"""
from __future__ import annotations

import ctypes
import errno
import glob
import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger("atomicrag")

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV}


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically (``renameat2(RENAME_EXCHANGE)``); False where the OS
    or file system cannot, so the caller falls back to two renames."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, f"swapping {a} and {b}: {os.strerror(err)}")


def is_complete(folder: Path) -> bool:
    """A folder a save finished writing: its manifest.json, written last, is there."""
    return (folder / "manifest.json").is_file()


def leftovers(path: Path) -> list[Path]:
    """``.NAME.tmp-PID`` / ``.NAME.old-PID`` folders beside ``path``, newest first."""
    found = [p for kind in ("tmp", "old") for p in path.parent.glob(f".{glob.escape(path.name)}.{kind}-*")
             if p.is_dir() and p.name.rsplit("-", 1)[-1].isdigit()]
    return sorted(found, key=lambda p: _manifest_mtime(p), reverse=True)


def _manifest_mtime(p: Path) -> int:
    try:
        return (p / "manifest.json").stat().st_mtime_ns
    except OSError:
        return -1


def _writer_gone(p: Path) -> bool:
    pid = int(p.name.rsplit("-", 1)[-1])
    return pid == os.getpid() or not alive(pid)


def finish_interrupted_save(path: Path) -> Path | None:
    """When ``path`` holds no complete index but a dead writer left a complete copy beside it
    (killed between the two renames of a save), move the newest such copy to ``path`` and return
    where it came from; None when there was nothing to finish. Call it holding the write lock."""
    if is_complete(path):
        return None
    for p in leftovers(path):
        if is_complete(p) and _writer_gone(p):
            if path.exists():  # an empty folder, or one a save never finished: keep it aside, never delete
                if path.is_dir() and not any(path.iterdir()):
                    path.rmdir()
                else:
                    return None
            os.replace(p, path)
            log.warning("%s: an earlier save was interrupted between its two renames; its complete copy %s is "
                        "back in place", path, p.name)
            return p
    return None


def remove_leftovers(path: Path) -> list[Path]:
    """Delete the leftover folders of killed saves beside ``path``, only while ``path`` holds a
    complete index (then none of them is the only copy); a live writer's folder is kept."""
    if not is_complete(path):
        return []
    removed = []
    for p in leftovers(path):
        if _writer_gone(p):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def in_progress(path: Path) -> bool:
    """A save of ``path`` by a live process (this one included) is under way: its temporary folders are beside it."""
    return any(alive(int(p.name.rsplit("-", 1)[-1])) for p in leftovers(path))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
