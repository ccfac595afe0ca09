"""What every atomizer shares: the interface, atom ids, spans, input checks, progress bars.

An atomizer turns chunks into knowledge atoms (``Atom``), each with the entity strings it
mentions (surface forms; the graph canonicalises them) and provenance: ``chunk_id``,
``passage_id`` and, when the atom is a literal slice of its chunk, the character ``span``.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeVar, runtime_checkable

from atomicrag.core.progress import progress_enabled  # noqa: F401  (atomizers read it from here)
from atomicrag.core.schemas import AtomizeResult, Chunk
from atomicrag.prompts._common import dedupe as dedupe_keep_order  # noqa: F401  (atomizers import it from here)

T = TypeVar("T")


@runtime_checkable
class Atomizer(Protocol):
    name: str
    uses_llm: bool  # True when the output depends on an LLM (its model and prompt versions)

    def atomize(self, chunks: list[Chunk]) -> AtomizeResult:
        ...


def atom_id(chunk_id: str, j: int) -> str:
    """Deterministic atom id: the chunk id plus the atom's position inside the chunk."""
    return f"{chunk_id}#a{j}"


_TRAILING_PARENS = re.compile(r"\s*\([^()]*\)\s*$")


def title_entity(title: str) -> str:
    """The entity a passage title names: "Theodred II (Bishop of Elmham)" -> "Theodred II"."""
    t = title.strip()
    return _TRAILING_PARENS.sub("", t).strip() or t


def with_title(text: str, entities: list[str], title: str, enabled: bool) -> tuple[str, list[str]]:
    """``(text, entities)`` of an atom with its chunk's title as context (see AtomizerConfig.title_context)."""
    if not enabled or not title.strip():
        return text, entities
    name = title_entity(title)
    ents = entities if any(e.casefold() == name.casefold() for e in entities) else [name, *entities]
    return f"{title.strip()}: {text}", ents


def find_span(chunk_text: str, atom_text: str) -> tuple[int, int] | None:
    """The character span of ``atom_text`` in the chunk when it is a literal slice, else None."""
    if not atom_text:
        return None
    i = chunk_text.find(atom_text)
    return (i, i + len(atom_text)) if i >= 0 else None


def check_chunks(chunks: list[Chunk]) -> None:
    """Fail early with a clear message: an empty corpus or duplicate chunk ids break provenance."""
    if not chunks:
        raise ValueError("cannot atomize an empty corpus: no chunks were given")
    seen: set[str] = set()
    for c in chunks:
        if c.id in seen:
            raise ValueError(f"duplicate chunk id {c.id!r}: chunk ids must be unique")
        seen.add(c.id)


def pbar(iterable: Iterable[T] | None = None, *, total: int | None = None, desc: str = "",
         enabled: bool = True, unit: str = "chunk") -> Any:
    """A tqdm bar on stderr (or a silent stand-in with the same ``update``/``close`` methods)."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, disable=not enabled, unit=unit,
                file=sys.stderr, dynamic_ncols=True, leave=False)


def batched(items: list[T], size: int) -> Iterator[list[T]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def passage_slices(chunks: list[Chunk], size: int) -> Iterator[list[Chunk]]:
    """Consecutive slices of about ``size`` chunks that never split a passage's chunks.

    An atomizer may work across a passage's windows (the sentence atomizer merges a sentence that
    two overlapping windows repeat), so a passage cut between two ``atomize()`` calls would keep
    both copies, and its atoms would depend on where the cut fell, i.e. on which other documents
    were indexed with it: an index grown by ``insert`` or shrunk by ``delete`` would differ from
    a fresh build. A passage's chunks are contiguous, so a slice is extended to its last one.
    """
    start = 0
    while start < len(chunks):
        end = min(start + size, len(chunks))
        while end < len(chunks) and chunks[end].passage_id == chunks[end - 1].passage_id:
            end += 1
        yield chunks[start:end]
        start = end


