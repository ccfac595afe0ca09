"""Content-addressed stage caches and atomic file writes.

A stage's output lives in ``<cache_dir>/<dataset>/<stage>/<key>/`` where ``key`` is a hash of
exactly the inputs and config slice that determine it. A folder is complete only when its
``manifest.json`` exists; it is written last, and every file is written to a temporary name,
fsynced and renamed, so a crash never leaves a half-written artifact that looks finished.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

MANIFEST = "manifest.json"
log = logging.getLogger(__name__)
T = TypeVar("T")
# what reading a damaged cache raises: torn or garbage JSON/safetensors/arrays, missing files
# (safetensors' own SafetensorError is matched by name: core does not import it)
_DAMAGE_ERRORS = (OSError, ValueError, KeyError, IndexError, TypeError, EOFError, RuntimeError)


def stable_json(obj: Any) -> str:
    """Canonical JSON (sorted keys, no whitespace) used for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(*parts: Any, length: int = 16) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p if isinstance(p, bytes) else stable_json(p).encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:length]


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success fsync it and rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        # a full disk shows up on flush/close, whose error names no file: name the one being written
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def move_aside(path: str | Path, *companions: str) -> Path:
    """Rename a damaged file or folder to ``<name>.damaged-<UTC time>`` beside it (kept for a look,
    never read again) and return the new path. ``companions`` are suffixes of files that belong
    with it (SQLite's ``-wal``/``-shm``), moved along under the same stamp."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():  # two in one second: never overwrite an earlier one
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    os.replace(path, target)
    for suffix in companions:
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.replace(extra, target.with_name(target.name + suffix))
    return target


def is_damage(exc: BaseException) -> bool:
    """Whether ``exc`` (raised while reading a cache) says the cache's content is damaged."""
    return isinstance(exc, _DAMAGE_ERRORS) or type(exc).__name__ == "SafetensorError"


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    write_text_atomic(path, json.dumps(obj, indent=indent, ensure_ascii=False, default=str) + "\n")


def write_jsonl_atomic(path: str | Path, rows: list[dict[str, Any]]) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{i}: invalid JSON ({exc.msg})") from exc
    return out


class StageCache:
    """One stage's cache folder, e.g. ``StageCache(root, "2wiki", "atomize", key)``."""

    def __init__(self, cache_dir: str | Path, dataset: str, stage: str, key: str) -> None:
        self.dir = Path(cache_dir) / dataset / stage / key
        self.stage = stage
        self.key = key

    @property
    def complete(self) -> bool:
        return (self.dir / MANIFEST).is_file()

    def path(self, name: str) -> Path:
        return self.dir / name

    def manifest(self) -> dict[str, Any]:
        return json.loads((self.dir / MANIFEST).read_text())

    def load(self, loader: Callable[[Path], T], *, config_key: str = "paths.cache_dir") -> T | None:
        """The finished stage read by ``loader(folder)``; ``None`` when it is not finished, or when
        it is damaged (unparsable manifest or files): then the folder is moved aside with a warning
        naming it and ``config_key``, and the caller rebuilds the stage."""
        if not self.complete:
            return None
        try:
            manifest = self.manifest()
            if not isinstance(manifest, dict) or manifest.get("key") != self.key:
                raise ValueError(f"{MANIFEST} does not describe this stage (key {self.key})")
            return loader(self.dir)
        except Exception as exc:
            if not is_damage(exc):
                raise
            moved = move_aside(self.dir)
            log.warning("the %s stage cache %s (under %s) is damaged (%s: %s); moved it to %s and rebuilding it",
                        self.stage, self.dir, config_key, type(exc).__name__, str(exc)[:200], moved)
            return None

    def begin(self) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        return self.dir

    def finish(self, inputs: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
        """Mark complete: write the manifest last."""
        from atomicrag import __version__

        manifest = {
            "stage": self.stage,
            "key": self.key,
            "inputs": inputs,
            "atomicrag_version": __version__,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **(extra or {}),
        }
        write_json_atomic(self.dir / MANIFEST, manifest)

    def clear(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
