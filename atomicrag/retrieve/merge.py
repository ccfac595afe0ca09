"""Merge the kept atoms into the reader's context (paper §3.4, Eq. 11).

``reader.merge`` (docs/fidelity.md):

- ``citation_units`` (paper): the best ``max_context`` distinct atoms are grouped by source
  passage; each group is one citation unit (passage id, title when known, its atoms in score
  order), scored by its best atom; units are ordered by that score.
- ``string_dedupe`` (released code): atoms with exactly the same text collapse into one entry
  that keeps the highest score; entries are sorted by score and the first ``max_context`` kept.
  ``reader.context_order=sieve`` keeps the sieve's order instead where a question was not
  decomposed (the released reader reads that question's kept atoms as the sieve listed them).

Both keep provenance (atom ids, passage ids) so answers can cite and recall can be measured:
an atom counts for the passage it came from.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from atomicrag.core.schemas import ScoredAtom

MODES = ("citation_units", "string_dedupe")


@dataclass
class ContextItem:
    """One entry of the reader's context."""

    text: str  # what the reader sees (a unit's atoms joined, or one atom)
    score: float  # unit: best atom score; string_dedupe: best score of that text
    passage_id: str  # the passage a citation points to
    title: str = ""
    atom_ids: list[str] = field(default_factory=list)
    atom_texts: list[str] = field(default_factory=list)
    atom_scores: list[float] = field(default_factory=list)
    passage_ids: list[str] = field(default_factory=list)  # every source passage of these atoms

    @property
    def n_atoms(self) -> int:
        return len(self.atom_ids)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _best_by(atoms: Sequence[ScoredAtom], key: Any) -> list[tuple[ScoredAtom, list[ScoredAtom]]]:
    """Group atoms by ``key(atom)``; each group's representative is its highest-scored atom.
    Groups come back sorted by that score, ties broken by first appearance (deterministic)."""
    groups: dict[Any, list[ScoredAtom]] = {}
    for atom in atoms:
        groups.setdefault(key(atom), []).append(atom)
    reps = []
    for pos, members in enumerate(groups.values()):
        best = max(members, key=lambda a: a.score)  # max keeps the first of equal scores
        reps.append((pos, best, members))
    reps.sort(key=lambda t: (-t[1].score, t[0]))
    return [(best, members) for _, best, members in reps]


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def citation_units(atoms: Sequence[ScoredAtom], max_context: int,
                   titles: Mapping[str, str] | None = None) -> list[ContextItem]:
    titles = titles or {}
    # One entry per atom id first: the same atom kept by several queries counts once.
    distinct = [best for best, _ in _best_by(atoms, lambda a: a.atom_id)][:max_context]
    units: dict[str, list[ScoredAtom]] = {}
    for atom in distinct:  # already in score order, so each unit's atoms are too
        units.setdefault(atom.passage_id, []).append(atom)
    items = []
    for pid, members in units.items():  # insertion order = order of each unit's best atom
        texts: list[str] = []
        kept: list[ScoredAtom] = []
        for atom in members:
            if atom.text.strip() in texts:  # two atom ids, same sentence: show it once
                continue
            texts.append(atom.text.strip())
            kept.append(atom)
        items.append(ContextItem(
            text=" ".join(texts), score=kept[0].score, passage_id=pid, title=titles.get(pid, ""),
            atom_ids=[a.atom_id for a in members], atom_texts=texts,
            atom_scores=[a.score for a in kept], passage_ids=[pid],
        ))
    return items


def string_dedupe(atoms: Sequence[ScoredAtom], max_context: int,
                  titles: Mapping[str, str] | None = None, order: str = "score") -> list[ContextItem]:
    """One entry per distinct text, its best score kept. ``order``: score (best score first; equal
    scores in the order their best atoms came, as the released merge of a decomposed question) |
    sieve (the order the atoms came, i.e. the sieve's: the released reader's context of a question
    that was not decomposed, which it never re-sorts)."""
    titles = titles or {}
    groups: dict[str, list[tuple[int, ScoredAtom]]] = {}
    for pos, atom in enumerate(atoms):
        groups.setdefault(atom.text, []).append((pos, atom))
    ranked = []
    for members in groups.values():
        best_pos, best = members[0]
        for pos, atom in members[1:]:  # a strictly higher score replaces the best (and its position)
            if atom.score > best.score:
                best_pos, best = pos, atom
        ranked.append((best_pos, members[0][0], best, [a for _, a in members]))
    if order == "score":
        ranked.sort(key=lambda t: (-t[2].score, t[0]))
    elif order == "sieve":
        ranked.sort(key=lambda t: t[1])
    else:
        raise ValueError(f"unknown context order {order!r}; expected score or sieve")
    items = []
    for _, _, best, members in ranked[:max_context]:
        items.append(ContextItem(
            text=best.text, score=best.score, passage_id=best.passage_id,
            title=titles.get(best.passage_id, ""),
            atom_ids=_unique([best.atom_id] + [a.atom_id for a in members]),
            atom_texts=[best.text], atom_scores=[best.score],
            passage_ids=_unique([best.passage_id] + [a.passage_id for a in members]),
        ))
    return items


def merge_context(atoms: Sequence[ScoredAtom], mode: str, max_context: int,
                  titles: Mapping[str, str] | None = None, order: str = "score") -> list[ContextItem]:
    """Build the context from kept atoms; ``mode`` is ``reader.merge``, ``max_context`` is
    ``SieveConfig.max_context`` (a cap on atoms, for both modes); ``order`` (string_dedupe only):
    score | sieve (``string_dedupe``)."""
    if max_context <= 0:
        raise ValueError("max_context must be > 0")
    if mode == "citation_units":
        return citation_units(atoms, max_context, titles)
    if mode == "string_dedupe":
        return string_dedupe(atoms, max_context, titles, order)
    raise ValueError(f"unknown merge mode {mode!r}; expected one of {MODES}")


def context_passage_ids(items: Sequence[ContextItem]) -> list[str]:
    """Passage ids in context rank order, each once (for recall@k of the final context)."""
    return _unique([pid for item in items for pid in ([item.passage_id] + item.passage_ids)])


def passage_ranking(atoms: Sequence[ScoredAtom]) -> list[str]:
    """Passage ids ranked by their best atom score, each once (for recall@k of retrieval
    before the sieve, e.g. a query's top-k candidates or the merged candidates)."""
    return _unique([best.passage_id for best, _ in _best_by(atoms, lambda a: a.atom_id)])
