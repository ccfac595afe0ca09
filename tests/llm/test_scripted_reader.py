"""The scripted model's reader answers from what was retrieved, so a parity replay's answers (and
the judge scores on them) move when retrieval does."""
from __future__ import annotations

from atomicrag.llm.scripted import READER_BRANCHES, ScriptedModel, context_names


def _reader_body(passages: list[str], question: str) -> dict:
    # the released reader's layout: each passage after a "Wikipedia Title:" label, then the question
    user = "".join(f"Wikipedia Title: {p}\n\n" for p in passages) + f"Question: {question}\nThought: "
    return {"messages": [{"role": "system", "content": "Answer the question."}, {"role": "user", "content": user}]}


def test_the_label_before_each_passage_is_not_an_answer() -> None:
    names = context_names("Wikipedia Title: Maria Thins was born in Gouda.\n\nWikipedia Title: Title: x\n\n",
                          "Where was she born?")
    assert names[0] == "Maria Thins" and not any("Wikipedia" in n or n == "Title" for n in names)


def test_the_answer_follows_the_retrieved_passages() -> None:
    question = "Who was the mother-in-law of the painter?"
    model = ScriptedModel([], [question], {"reader": r"^\s*Answer the question"})
    assert READER_BRANCHES[0] == "reader_one_marker"  # question 0 gets one "Answer:" marker
    one = model.reply(_reader_body(["Maria Thins lived in Delft.", "Johannes Vermeer painted."], question))
    other = model.reply(_reader_body(["Johannes Vermeer painted.", "Maria Thins lived in Delft."], question))
    assert one.branch == "reader_one_marker"
    assert one.text.rsplit("Answer:", 1)[1].strip() == "Maria Thins"
    assert other.text.rsplit("Answer:", 1)[1].strip() == "Johannes Vermeer"


def test_a_name_the_question_already_holds_is_not_the_answer_while_another_is_retrieved() -> None:
    names = context_names("Wikipedia Title: Johannes Vermeer married. Maria Thins was his mother-in-law.\n\n",
                          "Whom did Johannes Vermeer marry?")
    assert names[0] == "Maria Thins"
