"""Digests of a saved index's files: written into its manifest on save, verified on load.

The counts, shapes and id ranges that ``_load_dir`` checks catch a truncated or mismatched file, not
one flipped byte inside a vector, an atom's text or a document: those load with changed data. So
``manifest.json`` lists every other file of the index folder with its SHA-256 and size (``"files"``),
and load refuses a file whose digest or size differs, naming it. SHA-256 because anyone can check
it by hand (``sha256sum graph/tensors.safetensors``); its cost on load is recorded by
``benchmarks/checksums.py``. Indexes saved before digests existed have no ``"files"``: they load
with a warning (nothing to verify against), and the next save adds them.
"""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger("atomicrag")

DIGEST = "sha256"


def file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, DIGEST).hexdigest()


def folder_digests(folder: Path, skip: str = "manifest.json") -> dict[str, dict[str, Any]]:
    """``{relative/posix/path: {"sha256": hex, "bytes": size}}`` of every file under ``folder``
    except ``skip`` (the manifest, which holds this listing)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.relative_to(folder).as_posix() != skip:
            out[p.relative_to(folder).as_posix()] = {DIGEST: file_digest(p), "bytes": p.stat().st_size}
    return out


def verify_digests(folder: Path, listed: Any) -> None:
    """Raise ``IndexDamagedError`` naming the first listed file that is missing or whose size or
    digest differs from ``listed`` (a manifest's ``"files"``); None: an index saved before digests,
    loaded with a warning."""
    from atomicrag.engine.api import damaged

    if listed is None:
        log.warning("%s was saved without file checksums (by an atomicrag older than the checksums): a damaged "
                    "file cannot be detected; save it again to add them", folder)
        return
    if not isinstance(listed, dict):
        raise damaged(folder / "manifest.json", f"'files' must map file names to digests, found {type(listed).__name__}")
    for name, entry in listed.items():
        path = folder / name
        if not isinstance(entry, dict) or not isinstance(entry.get(DIGEST), str) or ".." in Path(name).parts \
                or Path(name).is_absolute():
            raise damaged(folder / "manifest.json", f"'files' entry {name!r} is not a {DIGEST} digest of a file inside "
                                                    "the index")
        if not path.is_file():
            raise damaged(path, "the file is missing (manifest.json lists it)")
        size = path.stat().st_size
        if isinstance(entry.get("bytes"), int) and size != entry["bytes"]:
            raise damaged(path, f"it has {size} bytes, manifest.json records {entry['bytes']}: the file was changed "
                                "or truncated")
        if file_digest(path) != entry[DIGEST]:
            raise damaged(path, f"its {DIGEST} differs from the one manifest.json records: the file was changed or "
                                "damaged after the index was saved")
