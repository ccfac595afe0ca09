"""Graph-Bench Answer Accuracy judge prompts (paper Appendix A.1.5).

Two prompts: ``statements`` splits a text (the system's answer or the reference) into short
standalone statements; ``classify`` sorts the answer's statements and the reference's
statements into TP (answer statements the reference supports), FP (answer statements it does
not support) and FN (reference statements the answer misses). FC is the F1 of those counts.
Wording is ours, written from the Graph-Bench description; the reply shapes match Graph-Bench
(``TP``/``FP``/``FN`` lists of {statement, reason}) so counts mean the same thing.
"""
from __future__ import annotations

import json
from typing import Any

from atomicrag.prompts.released import ReleasedPrompts

VERSION = "judge-v2"

SCHEMA: dict[str, dict[str, Any]] = {
    "statements": {
        "type": "object",
        "properties": {"statements": {"type": "array", "items": {"type": "string"}}},
        "required": ["statements"],
        "additionalProperties": False,  # OpenAI strict mode requires it on every object
    },
    "classify": {
        "type": "object",
        "properties": {
            key: {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"statement": {"type": "string"}, "reason": {"type": "string"}},
                    "required": ["statement", "reason"],
                    "additionalProperties": False,
                },
            }
            for key in ("TP", "FP", "FN")
        },
        "required": ["TP", "FP", "FN"],
        "additionalProperties": False,
    },
}

TEMPLATE: dict[str, str] = {
    "statements": (
        "Split the text below into short standalone statements, each asserting one fact and "
        "understandable without the others. Replace pronouns by the names they refer to and "
        "keep numbers, dates and qualifiers exactly. Use the question only to resolve what the "
        "text refers to; do not add facts that are not in the text. An answer that says it cannot "
        "answer is still split into statements; only an empty text gives an empty list.\n\n"
        "Reply with one JSON object and nothing else: {{\"statements\": [\"...\", \"...\"]}}\n\n"
        "Question: {question}\nText: {text}"
    ),
    "classify": (
        "Compare the statements of an answer with the statements of a reference answer to a "
        "question. Put every statement into exactly one category:\n"
        "- TP: an answer statement that is directly supported by one or more reference "
        "statements;\n"
        "- FP: an answer statement that no reference statement supports (wrong or unsupported);\n"
        "- FN: a reference statement that the answer does not cover.\n"
        "Give a short reason for each. Example: question \"When did the Jubilee line open?\", "
        "answer statements [\"The Jubilee line opened in 1979.\", \"The Jubilee line is painted "
        "red on the Tube map.\"], reference statements [\"The Jubilee line opened in 1979.\", "
        "\"The Jubilee line was extended to Stratford in 1999.\"] give TP = the opening year, FP = "
        "the map colour, FN = the extension.\n\n"
        "Reply with one JSON object and nothing else: {{\"TP\": [{{\"statement\": \"...\", "
        "\"reason\": \"...\"}}], \"FP\": [...], \"FN\": [...]}}\n\n"
        "Question: {question}\nAnswer statements: {answer}\nReference statements: {reference}"
    ),
}


def build_statement_messages(question: str, text: str,
                             released: ReleasedPrompts | None = None) -> list[dict[str, str]]:
    if released is not None:  # the released judge formats the unstripped strings
        return released.judge_statements(question, text)
    return [{"role": "user", "content": TEMPLATE["statements"].format(
        question=question.strip(), text=text.strip())}]


def build_classify_messages(question: str, answer_statements: list[str],
                            reference_statements: list[str],
                            released: ReleasedPrompts | None = None) -> list[dict[str, str]]:
    if released is not None:
        return released.judge_classify(question, answer_statements, reference_statements)
    return [{"role": "user", "content": TEMPLATE["classify"].format(
        question=question.strip(),
        answer=json.dumps(answer_statements, ensure_ascii=False),
        reference=json.dumps(reference_statements, ensure_ascii=False))}]


def parse_statements(obj: Any) -> list[str]:
    """``{"statements": [...]}`` (or a bare list) → non-empty stripped strings.

    Raises ``TypeError`` on any other shape: an unreadable reply is a failure, not
    "no statements" (which would wrongly score the answer 0 or skip the sample).
    """
    items = obj.get("statements") if isinstance(obj, dict) else obj
    if not isinstance(items, list):
        raise TypeError("statement reply is not {'statements': [...]}")
    return [s.strip() for s in (str(x) for x in items if x is not None) if s.strip()]


def parse_classification(obj: Any) -> tuple[int, int, int]:
    """Count the TP, FP and FN entries (as Graph-Bench does: list lengths)."""
    if not isinstance(obj, dict):
        raise TypeError("classification reply is not an object")
    counts = []
    for key in ("TP", "FP", "FN"):
        value = obj.get(key, [])
        if value is None:
            value = []
        if not isinstance(value, list):
            raise TypeError(f"classification reply's {key!r} is not a list")
        counts.append(len(value))
    return counts[0], counts[1], counts[2]

