"""Evidence coverage (issue #21 item 3): the metric for corpora without gold passage ids."""
from __future__ import annotations

from atomicrag.core.schemas import QueryTrace, Question
from atomicrag.evaluate.coverage import evidence_coverage, evidence_facts
from atomicrag.evaluate.score import score_run

EVIDENCE = ("Basal cell carcinoma arises from basal cells.; "
            "Basal cells are located in the lower part of the epidermis.")


def test_a_fact_is_covered_when_70_percent_of_its_content_words_are_in_the_first_words():
    assert evidence_facts(EVIDENCE) == ["Basal cell carcinoma arises from basal cells.",
                                        "Basal cells are located in the lower part of the epidermis."]
    ctx = ["BCC: basal cell carcinoma arises in basal cells.", "Unrelated text " * 200,
           "Basal cells sit in the lower part of the epidermis, where they are located."]
    assert evidence_coverage(EVIDENCE, ctx, words=300) == 0.5  # the second fact comes after word 300
    assert evidence_coverage(EVIDENCE, ctx, words=600) == 1.0
    assert evidence_coverage(EVIDENCE, ["Nothing relevant here."]) == 0.0
    assert evidence_coverage("", ctx) is None


def test_score_run_reports_coverage_per_type_next_to_acc():
    q = Question("m1", "Where do basal cells sit?", ["In the lower epidermis."], "Fact Retrieval", [], EVIDENCE)
    t = QueryTrace(question_id="m1", question=q.question,
                   context=[{"text": "Basal cell carcinoma arises from basal cells in the lower part of the "
                                     "epidermis, where basal cells are located."}])
    metrics, per_q = score_run([q], [t], answered=False)
    assert per_q[0]["coverage@300"] == 1.0 and per_q[0]["coverage@600"] == 1.0
    assert metrics["by_type"]["Fact Retrieval"]["coverage@300"] == 100.0
    assert metrics["coverage_table"] == {"fact_300": 100.0, "fact_600": 100.0}
