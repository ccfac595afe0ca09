import json
from pathlib import Path

import pytest

from atomicrag.core.schemas import Question
from atomicrag.evaluate.aggregate import acc_type, aggregate, group_of, native_type, row_for


@pytest.mark.parametrize(
    "native, expected",
    [
        ("Fact Retrieval", "Fact Retrieval"),
        ("Contextual Summarization", "Contextual Summarize"),
        ("compositional", "Complex Reasoning"),
        ("bridge_comparison", "Complex Reasoning"),
        ("inference", "Complex Reasoning"),
        ("bridge", "Complex Reasoning"),
        ("comparison", "Complex Reasoning"),
        ("3hop1", "Complex Reasoning"),
        ("", "Unknown"),
    ],
)
def test_acc_type(native, expected):
    assert acc_type(native) == expected


def test_native_type_uses_musique_hop_type():
    assert native_type("Complex Reasoning", {"hop_type": "3hop1"}) == "3hop"
    assert native_type("compositional", {}) == "compositional"


def q(i, qtype, source=None, meta=None):
    return Question(id=f"q{i}", question="?", question_type=qtype,
                    corpus=source, meta=dict(meta or {}, **({"source": source} if source else {})))


def test_novel_macro_average_over_novels():
    rows = [
        row_for(q(1, "Fact Retrieval", "Novel-A"), {"acc": 1.0}),
        row_for(q(2, "Fact Retrieval", "Novel-A"), {"acc": 0.0}),
        row_for(q(3, "Fact Retrieval", "Novel-B"), {"acc": 1.0}),
        row_for(q(4, "Complex Reasoning", "Novel-A"), {"acc": 0.4}),
        row_for(q(5, "Complex Reasoning", "Novel-B"), {"acc": None}),  # skipped by the judge
    ]
    out = aggregate(rows)
    fact = out["by_type"]["Fact Retrieval"]
    assert fact["acc"] == pytest.approx((0.5 + 1.0) / 2)  # macro, not the micro 2/3
    assert fact["n"] == 3 and fact["n_acc"] == 3 and fact["n_groups"] == 2
    reason = out["by_type"]["Complex Reasoning"]
    assert reason["acc"] == pytest.approx(0.4) and reason["n"] == 2 and reason["n_acc"] == 1
    assert out["avg"]["acc"] == pytest.approx((0.75 + 0.4) / 2)  # mean over types
    assert out["overall"]["acc"] == pytest.approx((1 + 0 + 1 + 0.4) / 4)  # plain mean
    assert list(out["by_type"]) == ["Fact Retrieval", "Complex Reasoning"]  # paper order
    assert out["by_group"]["Novel-A"]["by_type"]["Fact Retrieval"]["acc"] == pytest.approx(0.5)


def test_multi_hop_counts_as_complex_reasoning_and_keeps_native_types():
    rows = [
        row_for(q(1, "compositional", "2wiki"), {"acc": 0.8, "em": 1.0, "f1": 1.0, "recall@2": 0.5}),
        row_for(q(2, "comparison", "2wiki"), {"acc": 0.6, "em": 0.0, "f1": 0.5, "recall@2": 1.0}),
        row_for(q(3, "comparison", "2wiki"), {"acc": 0.4, "em": 0.0, "f1": 0.0, "recall@2": None}),
    ]
    out = aggregate(rows)
    assert list(out["by_type"]) == ["Complex Reasoning"]
    cr = out["by_type"]["Complex Reasoning"]
    assert cr["acc"] == pytest.approx(0.6) and cr["em"] == pytest.approx(1 / 3)
    assert cr["recall@2"] == pytest.approx(0.75) and cr["n_recall@2"] == 2
    assert out["by_native_type"]["comparison"]["f1"] == pytest.approx(0.25)
    assert out["avg"]["acc"] == pytest.approx(0.6)
    assert "by_group" not in out  # one group: nothing to macro-average


def test_novel_questions_file_carries_the_novel_name():
    path = Path(__file__).resolve().parents[3] / "shared/data/graphbench_novel/questions.dev.jsonl"
    if not path.is_file():
        pytest.skip("shared Graph-Bench Novel data not present")
    with path.open() as f:
        first = json.loads(f.readline())
    question = Question(**first)
    assert group_of(question).startswith("Novel-")
