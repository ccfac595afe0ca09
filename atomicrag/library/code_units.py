"""Code blocks as atoms of their own: a Markdown document's fenced code (``meta["code_spans"]``,
set by ``data.ingest`` from ``data.markdown``) is never cut into sentences nor run into prose.

The sentence atomizer splits a chunk with spaCy, which reads ``print("Hello. World.")`` as two
sentences and joins a code line to the prose before it. After atomizing, each code block that
a chunk holds becomes one atom (its exact text, the title prefix the chunk's other atoms carry),
and the atoms that crossed it keep only their prose. Atoms an LLM rewrote (no span) are left as
they are; a block that overlapping token windows repeat becomes one atom, in its first chunk.
"""
from __future__ import annotations

from typing import Any

from atomicrag.core.schemas import Atom, Chunk
from atomicrag.engine.api import atom_id


def _prefix(atom: Atom, chunk: Chunk) -> str:
    """What the atomizer put before the sentence (``"Title: "``), "" when it rewrote the text."""
    assert atom.span is not None
    sentence = chunk.text[atom.span[0]:atom.span[1]]
    return atom.text[: len(atom.text) - len(sentence)] if atom.text.endswith(sentence) else ""


def _minus(span: tuple[int, int], cuts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    parts = [span]
    for ca, cb in cuts:
        parts = [p for x, y in parts for p in ((x, min(y, ca)), (max(x, cb), y)) if p[1] > p[0]]
    return parts


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def keep_code_whole(atoms: list[Atom], chunks: dict[str, Chunk], code_spans: list[Any]) -> list[Atom]:
    """``atoms`` of one document (in order) with each code block one atom (see the module docstring)."""
    spans = sorted((int(a), int(b)) for a, b in code_spans)
    if not spans:
        return atoms
    out: list[Atom] = []
    done: set[tuple[int, int]] = set()  # code blocks already an atom (document coordinates)
    by_chunk: dict[str, list[Atom]] = {}
    for a in atoms:
        by_chunk.setdefault(a.chunk_id, []).append(a)
    for cid, group in by_chunk.items():
        chunk = chunks[cid]
        local = [(max(a, chunk.start_char) - chunk.start_char, min(b, chunk.end_char) - chunk.start_char, (a, b))
                 for a, b in spans if a < chunk.end_char and b > chunk.start_char]
        if not local or any(a.span is None for a in group):
            out.extend(group)
            continue
        cuts = [(x, y) for x, y, _ in local]
        pieces: list[tuple[int, int, str, list[str], list[Any]]] = []  # start, end, prefix, entities, positions
        for a in group:
            assert a.span is not None
            if not any(a.span[0] < y and a.span[1] > x for x, y in cuts):
                pieces.append((a.span[0], a.span[1], "", [], [a]))  # untouched: kept as it is
                continue
            for x, y in _minus(a.span, cuts):
                x, y = _trim(chunk.text, x, y)
                if y > x:
                    pieces.append((x, y, _prefix(a, chunk), list(a.entities), []))
        for x, y, whole in local:
            if whole in done:
                continue
            done.add(whole)
            crossing = [a for a in group if a.span and a.span[0] < y and a.span[1] > x]
            ents = list(dict.fromkeys(e for a in crossing for e in a.entities))
            pieces.append((x, y, _prefix(crossing[0], chunk) if crossing else "", ents, []))
        pieces.sort(key=lambda p: (p[0], p[1]))
        for j, (x, y, prefix, ents, kept) in enumerate(pieces):
            if kept:
                out.append(kept[0])
                continue
            text = prefix + chunk.text[x:y]
            folded = text.casefold()
            out.append(Atom(id=atom_id(cid, j), text=text, chunk_id=cid, passage_id=chunk.passage_id,
                            entities=[e for e in ents if e.casefold() in folded], span=(x, y)))
    ids = [a.id for a in out]
    if len(set(ids)) != len(ids):  # an untouched atom kept an id a new piece took: number them again
        out = [Atom(id=atom_id(a.chunk_id, j), text=a.text, chunk_id=a.chunk_id, passage_id=a.passage_id,
                    entities=a.entities, span=a.span, positions=a.positions)
               for j, a in _numbered(out)]
    return out


def _numbered(atoms: list[Atom]) -> list[tuple[int, Atom]]:
    seen: dict[str, int] = {}
    out = []
    for a in atoms:
        seen[a.chunk_id] = seen.get(a.chunk_id, -1) + 1
        out.append((seen[a.chunk_id], a))
    return out
