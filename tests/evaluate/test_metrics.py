import pytest

from atomicrag.evaluate.metrics import (
    exact_match,
    normalize_answer,
    qa_scores,
    recall_at_k,
    token_f1,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The  Eiffel Tower!", "eiffel tower"),
        ("An apple, a day.", "apple day"),
        ("theater", "theater"),  # articles only as whole words
        ("  U.S.A.  ", "usa"),
        ("", ""),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_normalises_and_takes_best_gold():
    assert exact_match("the Eiffel Tower.", ["Eiffel Tower"]) == 1.0
    assert exact_match("Eiffel", ["Eiffel Tower"]) == 0.0
    assert exact_match("1862", ["June 1862", "1862"]) == 1.0
    assert exact_match("Paris", "paris") == 1.0  # a single gold string is accepted


def test_token_f1_hand_computed():
    # pred tokens [barack, obama], gold [obama]: P=1/2, R=1 -> F1 = 2/3
    assert token_f1("Barack Obama", ["Obama"]) == pytest.approx(2 / 3)
    # max over golds
    assert token_f1("Barack Obama", ["Michelle", "Barack Obama"]) == pytest.approx(1.0)
    # repeated tokens count once per occurrence: pred [cat, cat] vs gold [cat] -> P=1/2, R=1
    assert token_f1("the cat cat", ["a cat"]) == pytest.approx(2 / 3)
    assert token_f1("dog", ["cat"]) == 0.0
    # SQuAD convention for answers that normalise to nothing
    assert token_f1("the", ["a"]) == 1.0
    assert token_f1("", ["cat"]) == 0.0
    assert token_f1("cat", []) == 0.0


def test_recall_at_k_deduplicates_passages_first():
    retrieved = ["p1", "p1", "p2", "p1", "p3"]  # several atoms of p1 rank first
    gold = ["p2", "p3"]
    assert recall_at_k(retrieved, gold, 1) == 0.0
    assert recall_at_k(retrieved, gold, 2) == 0.5  # distinct top-2 = p1, p2
    assert recall_at_k(retrieved, gold, 5) == 1.0
    assert recall_at_k(retrieved, ["p2", "p2"], 2) == 1.0  # gold is a set
    assert recall_at_k(retrieved, [], 2) is None  # not computable, not 0
    with pytest.raises(ValueError):
        recall_at_k(retrieved, gold, 0)


def test_qa_scores_keys():
    s = qa_scores("Paris", ["Paris"], retrieved=["a", "b", "c"], gold_ids=["c"])
    assert s == {"em": 1.0, "f1": 1.0, "recall@2": 0.0, "recall@5": 1.0}
    s = qa_scores("x", [], retrieved=None)
    assert s["em"] is None and s["recall@2"] is None
