"""One atom per sentence, however many overlapping token windows repeat it.

Chunks are token windows that overlap (256 tokens, 32 shared with the next window): a sentence
inside the shared tokens is atomized twice, and a sentence cut by a window's end comes back
whole in the next window (or with the previous sentence's full stop: a window can start at it).
Both copies became atoms, so a query over two novels returned the same sentence twice among its
25 atoms. Here, within one passage and across different chunks, two atoms whose passage-level
spans share at least half of the shorter one are the same sentence: one is kept (with the union
of their entities) and the other's place is recorded in its ``positions``. The kept copy is the
first one, unless it touches its window's edge (cut) and the other does not. Atoms without a
span (an LLM rewrote them) are left alone.
"""
from __future__ import annotations

from collections.abc import Sequence

from atomicrag.core.schemas import Atom, Chunk

_RECENT = 16  # a window shares its first tokens with the previous window only: look back this far


def merge_window_repeats(atoms: Sequence[Atom], chunks: Sequence[Chunk]) -> list[Atom]:
    """``atoms`` in order with repeated window sentences merged into one atom each."""
    by_id = {c.id: c for c in chunks}
    offset = {c.id: c.start_char for c in chunks}
    kept: list[Atom | None] = []
    recent: dict[str, list[tuple[int, int, int]]] = {}  # passage -> (start, end, index into kept)
    for atom in atoms:
        if atom.span is None or atom.chunk_id not in offset:
            kept.append(atom)
            continue
        start, end = offset[atom.chunk_id] + atom.span[0], offset[atom.chunk_id] + atom.span[1]
        spans = recent.setdefault(atom.passage_id, [])
        inside = False
        for s, e, k in spans[-_RECENT:]:
            other = kept[k]
            if other is None or other.chunk_id == atom.chunk_id:
                continue
            if min(e, end) - max(s, start) < 0.5 * min(e - s, end - start):
                continue  # different sentences
            if _cut(other, by_id) and not _cut(atom, by_id):  # the kept copy was cut: this one replaces it
                atom.positions.extend([[other.chunk_id, *other.span], *other.positions])  # type: ignore[misc]
                atom.entities = _union(atom.entities, other.entities)
                kept[k] = None
                continue
            other.positions.append([atom.chunk_id, *atom.span])
            other.entities = _union(other.entities, atom.entities)
            inside = True
            break
        if not inside:
            spans.append((start, end, len(kept)))
            kept.append(atom)
    return [a for a in kept if a is not None]


def _cut(atom: Atom, chunks: dict[str, Chunk]) -> bool:
    """The atom touches an edge of its window that is not an edge of its passage."""
    chunk = chunks[atom.chunk_id]
    start, end = atom.span  # type: ignore[misc]
    text = chunk.text
    # a window that starts mid-sentence starts with a lower-case word or the last full stop
    at_start = chunk.start_char > 0 and not text[:start].strip() and not text[start:end].lstrip()[:1].isupper()
    at_end = not text[end:].strip() and not text[:end].rstrip().endswith((".", "!", "?", '"', "'"))
    return at_start or at_end


def _union(a: list[str], b: list[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))
