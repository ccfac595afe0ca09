"""The reader's context built from the ranked documents, by token budget.

The paper's context is the top-k atoms merged by passage (``merge.py``): a passage that ranks
through the bridge ranking reaches the reader only through atoms that rank on their own, and 25
sentence atoms are fewer words than a reader can take. Here the context is filled to
``reader.context_tokens`` from the ranked documents:

- a short document (``<= reader.whole_doc_tokens``, e.g. a 2Wiki passage) goes in whole, its
  sentences in document order, once, at its rank;
- a long document (a novel, a manual) goes in by its ranked atoms: its best atom at the
  document's rank, its other ranked atoms after every document's first unit, in atom-score
  order (a second document is not crowded out by the first one's tenth atom); then, while the
  budget lasts, ``reader.neighbour_sentences`` sentences on each side of each ranked atom, in
  the same order (``reader.atoms_first``; false: each atom comes with its neighbours at once,
  which spends the first words of the context on neighbours, measured worse on the even half
  of Graph-Bench Medical DEV: ``results/graphbench/medical_half0_snippets.json``, as
  experiments/answers/README.md reads it);
- a sentence already in the context is not repeated (overlapping windows, two snippets that
  touch, two atom ids with the same text).

Documents are read from the graph's own atoms (their order is document order), so nothing
beyond the index is needed at query time. Tokens are the project's regex tokens
(``\\w+|[^\\w\\s]``); the last unit is cut at a sentence boundary, or inside its first sentence
when nothing else fits.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from atomicrag.core.schemas import ScoredAtom
from atomicrag.retrieve.merge import ContextItem

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_SPACE = re.compile(r"\s+")


def count_tokens(text: str) -> int:
    return len(_TOKEN_RE.findall(text))


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


class DocumentStore:
    """The index's atoms grouped by document, in document order (sentence text without the
    ``Title: `` prefix that ``atomizer.title_context`` adds)."""

    def __init__(self, atoms: Sequence[Any], titles: Mapping[str, str] | None = None) -> None:
        self.titles = dict(titles or {})
        self.doc_atoms: dict[str, list[int]] = {}
        self.index: dict[str, int] = {}
        self.position: list[int] = []  # atom index -> its position in its document's list
        self.sentences: list[str] = []
        self.atom_ids: list[str] = []
        self.doc_of: list[str] = []  # atom index -> its document
        seen: dict[tuple[str, str], int] = {}  # (document, sentence) -> its position
        for i, a in enumerate(atoms):
            title = self.titles.get(a.passage_id, "")
            text = a.text.strip()
            if title and text.startswith(f"{title}: "):
                text = text[len(title) + 2:]
            self.index[a.id] = i
            self.sentences.append(text)
            self.atom_ids.append(a.id)
            self.doc_of.append(a.passage_id)
            doc = self.doc_atoms.setdefault(a.passage_id, [])
            # an overlapping window repeats a sentence: its document keeps it once (position of the first)
            key = (a.passage_id, _norm(text))
            if key in seen:
                self.position.append(seen[key])
                continue
            seen[key] = len(doc)
            self.position.append(len(doc))
            doc.append(i)
        self.doc_tokens = {pid: sum(count_tokens(self.sentences[i]) for i in idx) for pid, idx in self.doc_atoms.items()}


def _units(ranked_docs: Sequence[str], atoms: Sequence[ScoredAtom], store: DocumentStore,
           whole_doc_tokens: int, neighbours: int, atoms_first: bool = True) -> list[tuple[str, list[int], float]]:
    """Context units (document, atom indices in document order, score) in reading order."""
    best: dict[str, float] = {}
    for a in atoms:  # the best score of each atom id
        if a.atom_id in store.index and a.score > best.get(a.atom_id, float("-inf")):
            best[a.atom_id] = a.score
    hits: dict[str, list[tuple[float, int]]] = {}
    for aid, score in sorted(best.items(), key=lambda kv: -kv[1]):  # stable: ties keep first-seen order
        i = store.index[aid]
        hits.setdefault(store.doc_of[i], []).append((score, i))
    order = list(dict.fromkeys([d for d in ranked_docs if d in store.doc_atoms] + list(hits)))
    first: list[tuple[str, list[int], float]] = []
    later: list[tuple[str, list[int], float]] = []
    around: list[tuple[str, list[int], float]] = []
    for doc in order:
        idx = store.doc_atoms[doc]
        doc_hits = hits.get(doc, [])
        top = doc_hits[0][0] if doc_hits else float("-inf")
        if store.doc_tokens[doc] <= whole_doc_tokens:
            first.append((doc, list(idx), top))
            continue
        for k, (score, i) in enumerate(doc_hits):
            p = store.position[i]
            window = idx[max(0, p - neighbours): p + neighbours + 1]
            if atoms_first:  # the ranked sentence now, its neighbours after every ranked sentence
                (first if k == 0 else later).append((doc, [idx[p]], score))
                around.append((doc, window, score))
            else:
                (first if k == 0 else later).append((doc, window, score))
    later.sort(key=lambda u: -u[2])  # stable
    around.sort(key=lambda u: -u[2])
    return first + later + around


def build_document_context(ranked_docs: Sequence[str], atoms: Sequence[ScoredAtom], store: DocumentStore,
                           context_tokens: int, whole_doc_tokens: int = 200,
                           neighbours: int = 1, atoms_first: bool = True, max_documents: int = 0) -> list[ContextItem]:
    """The reader's context: ranked documents (whole or as snippets around their ranked atoms),
    deduplicated by sentence, filled to ``context_tokens``; with ``max_documents`` > 0, from the
    first that many documents only (a small reader reads fewer distractors). ``atoms``: the
    question's scored atoms (top-k candidates or sieve-kept), any order."""
    items: list[ContextItem] = []
    used: set[str] = set()
    docs: set[str] = set()
    left = context_tokens
    for doc, idx, score in _units(ranked_docs, atoms, store, whole_doc_tokens, neighbours, atoms_first):
        if left <= 0:
            break
        if max_documents and doc not in docs and len(docs) >= max_documents:
            continue
        docs.add(doc)
        texts: list[str] = []
        ids: list[str] = []
        for i in idx:
            text = store.sentences[i]
            key = _norm(text)
            if not key or key in used:
                continue
            n = count_tokens(text)
            if n > left:
                if texts:  # stop at a sentence boundary
                    left = 0
                    break
                text = _cut(text, left)  # nothing of this unit fits whole: its first sentence, cut
                n = left
            used.add(key)
            texts.append(text)
            ids.append(store.atom_ids[i])
            left -= n
            if left <= 0:
                break
        if texts:
            items.append(ContextItem(text=" ".join(texts), score=score, passage_id=doc,
                                     title=store.titles.get(doc, ""), atom_ids=ids, atom_texts=texts,
                                     atom_scores=[], passage_ids=[doc]))
    return items


def _cut(text: str, tokens: int) -> str:
    """The first ``tokens`` regex tokens of ``text`` (original spacing kept)."""
    spans = [m.span() for m in _TOKEN_RE.finditer(text)]
    return text[: spans[tokens - 1][1]] if 0 < tokens < len(spans) else text


def context_words(items: Sequence[Any]) -> list[str]:
    """The context's words in rank order (what evidence coverage reads)."""
    return [w for it in items for w in (it if isinstance(it, str) else it.text).split()]


def fit_budget(items: Sequence[ContextItem], context_tokens: int) -> list[ContextItem]:
    """``items`` in order, the last one cut at a sentence boundary (or inside its first sentence) so
    that their text holds at most ``context_tokens`` regex tokens: the same budget for a context
    of whole passages (vanilla RAG, gold passages) as for ``build_document_context``."""
    out: list[ContextItem] = []
    left = context_tokens
    for it in items:
        if left <= 0:
            break
        n = count_tokens(it.text)
        if n <= left:
            out.append(it)
            left -= n
            continue
        kept: list[str] = []
        for sent in re.split(r"(?<=[.!?])\s+", it.text):
            m = count_tokens(sent)
            if m > left:
                if not kept:
                    kept.append(_cut(sent, left))
                break
            kept.append(sent)
            left -= m
        out.append(dataclasses.replace(it, text=" ".join(kept)))
        break
    return out
