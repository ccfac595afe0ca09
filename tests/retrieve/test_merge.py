import pytest

from atomicrag.core.schemas import ScoredAtom
from atomicrag.retrieve.merge import context_passage_ids, merge_context, passage_ranking


def atom(aid, pid, score, text=None):
    return ScoredAtom(atom_id=aid, text=text or f"Fact {aid}.", score=score, passage_id=pid)


# What a sieve may hand over: a1 kept by two queries (two scores); a5 repeats a2's sentence
# from another passage; p1 holds two atoms.
KEPT = [
    atom("a1", "p1", 0.9),
    atom("a3", "p1", 0.5),
    atom("a2", "p2", 0.7, "Shared sentence."),
    atom("a4", "p3", 0.2),
    atom("a1", "p1", 0.4),
    atom("a5", "p4", 0.3, "Shared sentence."),
]


def test_citation_units_group_by_passage_with_provenance():
    items = merge_context(KEPT, "citation_units", 25, titles={"p1": "Title One"})
    assert [i.passage_id for i in items] == ["p1", "p2", "p4", "p3"]  # by best atom score
    p1 = items[0]
    assert p1.title == "Title One" and p1.score == 0.9
    assert p1.atom_ids == ["a1", "a3"]  # a1 once, atoms in score order
    assert p1.text == "Fact a1. Fact a3."
    assert p1.atom_scores == [0.9, 0.5] and p1.passage_ids == ["p1"]
    assert items[1].title == ""  # unknown title stays empty
    assert sum(i.n_atoms for i in items) == 5
    assert context_passage_ids(items) == ["p1", "p2", "p4", "p3"]


def test_citation_units_cap_counts_atoms():
    items = merge_context(KEPT, "citation_units", 2)
    assert [(i.passage_id, i.atom_ids) for i in items] == [("p1", ["a1"]), ("p2", ["a2"])]
    items = merge_context(KEPT, "citation_units", 3)
    assert [(i.passage_id, i.atom_ids) for i in items] == [("p1", ["a1", "a3"]), ("p2", ["a2"])]


def test_string_dedupe_keeps_max_score_and_all_provenance():
    items = merge_context(KEPT, "string_dedupe", 25)
    assert [i.text for i in items] == ["Fact a1.", "Shared sentence.", "Fact a3.", "Fact a4."]
    assert [i.score for i in items] == [0.9, 0.7, 0.5, 0.2]
    shared = items[1]
    assert shared.passage_id == "p2" and shared.atom_ids == ["a2", "a5"]
    assert shared.passage_ids == ["p2", "p4"]
    assert context_passage_ids(items) == ["p1", "p2", "p4", "p3"]
    assert len(merge_context(KEPT, "string_dedupe", 2)) == 2


def test_passage_ranking_and_errors():
    assert passage_ranking(KEPT) == ["p1", "p2", "p4", "p3"]
    assert merge_context([], "citation_units", 5) == []
    with pytest.raises(ValueError):
        merge_context(KEPT, "concatenate", 5)
    with pytest.raises(ValueError):
        merge_context(KEPT, "string_dedupe", 0)


def test_released_context_keeps_the_sieve_order_of_an_undecomposed_question():
    """reader.context_order=sieve: the released reader reads one query's kept atoms in the order
    its sieve reply listed them; score order would hand the reader another prompt."""
    kept = [atom("a4", "p3", 0.2), atom("a1", "p1", 0.9), atom("a2", "p2", 0.7)]  # the LLM's order
    assert [i.atom_ids[0] for i in merge_context(kept, "string_dedupe", 25, order="sieve")] == ["a4", "a1", "a2"]
    assert [i.atom_ids[0] for i in merge_context(kept, "string_dedupe", 25)] == ["a1", "a2", "a4"]
    assert [i.atom_ids[0] for i in merge_context(kept, "string_dedupe", 2, order="sieve")] == ["a4", "a1"]


def test_released_merge_breaks_score_ties_by_where_the_best_atom_came():
    """Decomposed questions (released): the same text keeps its highest score, and the position of
    that best occurrence (not of its first one) orders equal scores."""
    kept = [atom("x", "p1", 0.1, "Tied text."), atom("y", "p2", 0.5, "Other text."),
            atom("z", "p3", 0.5, "Tied text.")]  # "Tied text." reaches 0.5 at position 2
    assert [i.text for i in merge_context(kept, "string_dedupe", 25)] == ["Other text.", "Tied text."]
    # an equal score does not move the best occurrence: "Tied text." stays at its first position
    even = [atom("x", "p1", 0.5, "Tied text."), atom("y", "p2", 0.5, "Other text."),
            atom("z", "p3", 0.5, "Tied text.")]
    assert [i.text for i in merge_context(even, "string_dedupe", 25)] == ["Tied text.", "Other text."]
