"""Getting pinned source files: from a folder the user already has, or downloaded with resume.

A download goes to ``<file>.part`` and continues from its length after an interruption (an HTTP
``Range`` request); only a file whose checksums match is renamed into place, so a half-written or
tampered file is never used. Every failure names the URL (or the paths looked at).
"""
from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from atomicrag.data.sources import SourceFile

CHUNK = 1 << 16
GENERIC_NAMES = frozenset({"chunks.json", "questions.json"})


class SourceError(RuntimeError):
    """A source file could not be found, downloaded or verified."""


def git_blob_id(data: bytes) -> str:
    """The id git gives ``data`` as a blob: SHA-1 of ``b"blob <len>\\0"`` followed by the bytes."""
    h = hashlib.sha1(b"blob %d\x00" % len(data))
    h.update(data)
    return h.hexdigest()


def verify(path: Path, f: SourceFile) -> None:
    """Raise ``SourceError`` unless ``path`` holds exactly the pinned bytes of ``f``."""
    data = path.read_bytes()
    problems = []
    if f.size is not None and len(data) != f.size:
        problems.append(f"size {len(data)} bytes, expected {f.size}")
    if f.sha256 is not None and (got := hashlib.sha256(data).hexdigest()) != f.sha256:
        problems.append(f"sha256 {got}, expected {f.sha256}")
    if (got := git_blob_id(data)) != f.git_blob:
        problems.append(f"git blob id {got}, expected {f.git_blob}")
    if problems:
        raise SourceError(f"{path} is not {f.repo}:{f.path} at the pinned revision ({'; '.join(problems)}); "
                          f"the pinned file is {f.url}")


def candidates(root: Path, path: str) -> list[Path]:
    """Where a user's copy of repository file ``path`` may sit under ``root``: the full repository
    path, then each shorter tail (a copy of ``dataset/`` itself, or a flat folder of files); the same
    inside each sub-folder of ``root`` (several repositories checked out side by side)."""
    parts = path.split("/")
    # a generic name (every AtomicRAG corpus has a questions.json) must keep its folder (Medical/),
    # or one dataset's file would be taken for another's
    shortest = 2 if parts[-1] in GENERIC_NAMES else 1
    bases = [root] + sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else [root]
    return [base.joinpath(*parts[i:]) for base in bases for i in range(len(parts) - shortest + 1)]


def locate(root: Path, f: SourceFile) -> Path | None:
    """The user's copy of ``f`` under ``root``, or None."""
    return next((p for p in candidates(root, f.path) if p.is_file()), None)


def download(f: SourceFile, dest: Path, *, progress: bool = True, timeout: float = 60.0) -> Path:
    """Download ``f`` to ``dest`` (resuming ``dest.part``), verify it, and return ``dest``.

    A ``dest`` that is already there and verifies is kept as it is (nothing is fetched).
    """
    import httpx

    if dest.is_file():
        try:
            verify(dest, f)
            return dest
        except SourceError:
            dest.unlink()  # a stale or corrupt copy: fetch it again
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.is_file() else 0
    if f.size is not None and have > f.size:  # longer than the file can be: start over
        part.unlink()
        have = 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with httpx.stream("GET", f.url, headers=headers, timeout=timeout, follow_redirects=True) as resp:
            if resp.status_code == 416 and have:  # nothing left to fetch: the part is complete
                pass
            elif resp.status_code not in (200, 206):
                raise SourceError(f"downloading {f.url}: HTTP {resp.status_code}")
            else:
                if resp.status_code == 200:
                    have = 0  # the server ignored the Range header: write from the start
                total = f.size or (int(resp.headers.get("content-length", 0)) + have) or None
                bar = _bar(f.path, total, have, progress)
                with open(part, "ab" if have else "wb") as out:
                    for chunk in resp.iter_bytes(CHUNK):
                        out.write(chunk)
                        bar.update(len(chunk))
                    out.flush()
                    os.fsync(out.fileno())
                bar.close()
    except httpx.HTTPError as exc:
        kept = f"; {part.stat().st_size} bytes are kept in {part} and the next run continues from there" \
            if part.is_file() and part.stat().st_size else ""
        raise SourceError(f"could not download {f.url} ({type(exc).__name__}: {exc}); check the network, or "
                          f"get the file by other means and pass its folder with --from{kept}") from exc
    try:
        verify(part, f)
    except SourceError:
        part.unlink()  # a corrupt download is not resumed
        raise
    os.replace(part, dest)
    return dest


def _bar(name: str, total: int | None, initial: int, progress: bool):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc=name.rsplit("/", 1)[-1],
                disable=not progress or not sys.stderr.isatty(), file=sys.stderr)


def gather(files: Iterable[SourceFile], *, source_dir: Path | None, cache_dir: Path,
           optional: Iterable[SourceFile] = (), progress: bool = True, strict: bool = False,
           mismatched: list[str] | None = None) -> dict[str, Path]:
    """Local paths of ``files`` (required) and of those ``optional`` files that can be had.

    With ``source_dir`` the files are looked up there (``locate``) and verified, nothing is
    downloaded; without it they are downloaded into ``cache_dir/<repo>/<path>``. Returns
    ``{"<repo>:<path>": local path}``; a missing required file raises ``SourceError`` naming where
    it was looked for. A file under ``source_dir`` that is not the pinned revision is used with a
    warning (its key is appended to ``mismatched``), or refused when ``strict``.
    """
    out: dict[str, Path] = {}
    mismatched = mismatched if mismatched is not None else []
    wanted = [(f, True) for f in files] + [(f, False) for f in optional]
    for f, required in wanted:
        key = f"{f.repo}:{f.path}"
        if source_dir is not None:
            path = locate(source_dir, f)
            if path is None:
                if required:
                    looked = ", ".join(str(p) for p in candidates(source_dir, f.path))
                    raise SourceError(f"{f.path} (from {f.url}) is not in {source_dir}; looked at {looked}")
                continue
            try:
                verify(path, f)
            except SourceError as exc:  # the user's own revision: usable, but say it is not the pinned one
                if strict:
                    raise
                print(f"atomicrag: warning: {exc}; building from it anyway (pass --strict to refuse)",
                      file=sys.stderr)
                mismatched.append(key)
            out[key] = path
        else:
            try:
                out[key] = download(f, cache_dir / f.repo / f.path, progress=progress)
            except SourceError:
                if required:
                    raise
                print(f"atomicrag: warning: optional source {f.url} could not be downloaded; "
                      "its fields are left out", file=sys.stderr)
    return out
