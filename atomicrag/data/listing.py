"""What ``atomicrag data list`` prints (the command: ``atomicrag.library.data_cmd``): the datasets a run would find, file by file, with rows and sha256.

What a record of a dataset's size points at: the rows of each normalised file (``corpus.jsonl``,
``questions.dev.jsonl``, ``smoke/questions.jsonl``, ...) under every data root that
``paths.data_dir`` searches, in search order, and each file's sha256, so a count quoted in the docs
and the bytes it was counted on are one line of one printout.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atomicrag.core.offline_models import sha256_file


@dataclass(frozen=True)
class DataFile:
    root: Path
    dataset: str
    name: str  # the path under the dataset's folder: corpus.jsonl, smoke/questions.jsonl
    rows: int
    sha256: str


def count_rows(path: Path) -> int:
    """Non-empty lines of a JSONL file (the loaders skip blank lines the same way)."""
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def data_files(roots: list[Path]) -> list[DataFile]:
    """Every normalised JSONL file of every dataset folder under ``roots`` (a folder and its split
    folders, one level down), roots in search order, datasets and files sorted by name."""
    out = []
    for root in roots:
        if not root.is_dir():
            continue
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            files = sorted([*folder.glob("*.jsonl"), *folder.glob("*/*.jsonl")])
            out += [DataFile(root, folder.name, f.relative_to(folder).as_posix(), count_rows(f), sha256_file(f))
                    for f in files if not f.parent.name.startswith(".")]
    return out
