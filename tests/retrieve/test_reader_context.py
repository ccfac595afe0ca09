"""The reader's context by token budget (issue #21 item 1): what a reader gets to read."""
from __future__ import annotations

from atomicrag.core.schemas import Atom, ScoredAtom
from atomicrag.retrieve.merge import ContextItem
from atomicrag.retrieve.reader_context import (
    DocumentStore,
    build_document_context,
    context_words,
    count_tokens,
    fit_budget,
)


def _store() -> DocumentStore:
    atoms = [
        # a titled short passage (2Wiki-like), sentences carry the "Title: " prefix
        Atom("a0", "Blood Street: Blood Street is a 1988 film.", "c0", "p0"),
        Atom("a1", "Blood Street: It was directed by Leo Fong.", "c0", "p0"),
        # the bridge passage: ranked by the bridge ranking, none of its atoms among the top atoms
        Atom("b0", "Leo Fong: Leo Fong is an American film director.", "c1", "p1"),
        # a long untitled document: ten sentences, the third repeated by an overlapping window
        *[Atom(f"d{i}", f"Sentence number {i} of the long document says something.", "c2" if i < 6 else "c3", "p2")
          for i in range(10)],
        Atom("d2bis", "Sentence number 2 of the long document says something.", "c3", "p2"),
    ]
    return DocumentStore(atoms, {"p0": "Blood Street", "p1": "Leo Fong"})


def test_short_documents_go_in_whole_at_their_rank_including_bridge_documents():
    store = _store()
    top = [ScoredAtom("a0", "", 0.9, "p0")]  # only the first passage has a ranked atom
    items = build_document_context(["p0", "p1"], top, store, context_tokens=200, whole_doc_tokens=50)
    assert [it.passage_id for it in items] == ["p0", "p1"]
    assert items[0].text == "Blood Street is a 1988 film. It was directed by Leo Fong."  # no title prefix
    assert items[0].title == "Blood Street"
    assert "American film director" in items[1].text  # reached the reader with no atom of its own


def test_long_documents_give_their_ranked_atoms_first_then_their_neighbours():
    store = _store()
    top = [ScoredAtom("d5", "", 0.9, "p2"), ScoredAtom("d6", "", 0.8, "p2"), ScoredAtom("d2bis", "", 0.7, "p2")]
    items = build_document_context(["p2"], top, store, context_tokens=500, whole_doc_tokens=20, neighbours=1)
    texts = [s for it in items for s in it.atom_texts]
    sent = "Sentence number {} of the long document says something.".format
    assert texts == [sent(i) for i in (5, 6, 2, 4, 7, 1, 3)]  # atoms by score, then neighbours, none twice


def test_long_documents_give_snippets_around_ranked_atoms_without_repeats():
    store = _store()
    top = [ScoredAtom("d5", "", 0.9, "p2"), ScoredAtom("d6", "", 0.8, "p2"), ScoredAtom("d2bis", "", 0.7, "p2")]
    items = build_document_context(["p2"], top, store, context_tokens=500, whole_doc_tokens=20, neighbours=1,
                                   atoms_first=False)
    texts = [s for it in items for s in it.atom_texts]
    assert texts[:3] == [f"Sentence number {i} of the long document says something." for i in (4, 5, 6)]
    assert len(texts) == len(set(texts))  # d6's snippet repeats 5 and 6: only 7 is new
    assert texts[3] == "Sentence number 7 of the long document says something."
    # the repeated window sentence maps to the first copy's position: its snippet is 1-2-3
    assert texts[4:] == [f"Sentence number {i} of the long document says something." for i in (1, 2, 3)]


def test_budget_is_respected_and_filled():
    store = _store()
    top = [ScoredAtom(f"d{i}", "", 1.0 - i / 10, "p2") for i in range(10)]
    items = build_document_context(["p2"], top, store, context_tokens=25, whole_doc_tokens=20)
    assert sum(count_tokens(it.text) for it in items) == 25  # 10 tokens a sentence: 2 whole + a cut one
    assert len(context_words(items)) > 0


def test_fit_budget_cuts_whole_passages_at_a_sentence():
    items = [ContextItem("One two three. Four five six.", 1.0, "p0"), ContextItem("Seven eight.", 0.5, "p1")]
    assert [it.text for it in fit_budget(items, 5)] == ["One two three."]
    assert [it.text for it in fit_budget(items, 100)] == [it.text for it in items]


def test_max_documents_reads_only_the_first_ranked_documents():
    """reader.max_documents: the budget is not filled past the first N documents (a small reader
    reads fewer distractors); a long document's later snippets still come in, it is one document."""
    store = _store()
    top = [ScoredAtom("a0", "", 0.9, "p0"), ScoredAtom("d5", "", 0.8, "p2"), ScoredAtom("d6", "", 0.7, "p2")]
    every = build_document_context(["p0", "p2", "p1"], top, store, context_tokens=500, whole_doc_tokens=20)
    assert [it.passage_id for it in every][:3] == ["p0", "p2", "p1"]
    two = build_document_context(["p0", "p2", "p1"], top, store, context_tokens=500, whole_doc_tokens=20,
                                 max_documents=2)
    assert {it.passage_id for it in two} == {"p0", "p2"}
    assert sum(len(it.atom_texts) for it in two if it.passage_id == "p2") > 2  # atoms and their neighbours
