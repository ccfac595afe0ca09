"""Atomic Sieve prompt (paper §3.4, Appendix E "Figure 10").

The model sees a question and candidate atoms numbered 0..n-1 inside the prompt and answers
with the numbers to keep. Ids are local small integers, not atom ids, so the model can only
point at evidence it was shown: it cannot invent or rewrite a fact. Ids outside the range
are dropped by ``parse_keep_indices`` and reported.
"""
from __future__ import annotations

import json
from typing import Any

VERSION = "sieve-v1"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"keep_indices": {"type": "array", "items": {"type": "integer"}}},
    "required": ["keep_indices"],
    "additionalProperties": False,  # OpenAI strict mode requires it on every object
}

TEMPLATE = """You select evidence for a question-answering system. You receive a question and a \
JSON list of knowledge fragments, each with a numeric "id" and its "text".

Keep a fragment only when it is needed to answer the question:
- it states the answer or part of it, or
- it gives a fact that a reasoning step depends on (for example it identifies the entity the \
question refers to indirectly, or a date or place needed to compare).
Drop fragments about different entities that merely share a name or topic, general background \
the answer does not depend on, and fragments that only repeat a fragment you already keep.

Reply with one JSON object and nothing else: {"keep_indices": [ids to keep]}.
Use only ids that appear in the input. If no fragment helps, reply {"keep_indices": []}."""

# One worked example as a prior turn: small models follow the output format much more
# reliably with a demonstration than with the instruction alone.
_EXAMPLE_QUESTION = "Which river flows through the city where the Bauhaus school was founded?"
_EXAMPLE_FRAGMENTS = [
    "The Bauhaus school was founded in Weimar in 1919.",
    "The Bauhaus school moved to Dessau in 1925.",
    "Weimar lies on the river Ilm.",
    "The Bauhaus style influenced modern architecture worldwide.",
    "The Bauhaus art school was established in the city of Weimar.",
]
_EXAMPLE_REPLY = {"keep_indices": [0, 2]}

USER_TEMPLATE = "Question: {question}\n\nFragments:\n{fragments}"


def fragments_json(texts: list[str]) -> str:
    """The ``{"fragments": [{"id", "text"}]}`` block, ids 0..n-1 in candidate order."""
    return json.dumps({"fragments": [{"id": i, "text": t} for i, t in enumerate(texts)]},
                      ensure_ascii=False)


def build_messages(question: str, texts: list[str]) -> list[dict[str, str]]:
    """System instruction, one demonstration, then the real question with its fragments."""
    return [
        {"role": "system", "content": TEMPLATE},
        {"role": "user", "content": USER_TEMPLATE.format(
            question=_EXAMPLE_QUESTION, fragments=fragments_json(_EXAMPLE_FRAGMENTS))},
        {"role": "assistant", "content": json.dumps(_EXAMPLE_REPLY)},
        {"role": "user", "content": USER_TEMPLATE.format(
            question=question.strip(), fragments=fragments_json(texts))},
    ]


def parse_keep_indices(obj: Any, n: int) -> tuple[list[int], list[Any]]:
    """Return (valid ids in ascending order without repeats, invalid entries as given).

    Raises ``TypeError`` when ``obj`` is not ``{"keep_indices": [...]}``: the caller then keeps
    every candidate and counts the failure (the released code's behaviour on failure).
    Integer-valued strings ("3") are accepted; booleans, floats with a fraction, negative and
    out-of-range ids are invalid and dropped.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("keep_indices"), list):
        raise TypeError("sieve reply is not an object with a 'keep_indices' list")
    valid: set[int] = set()
    invalid: list[Any] = []
    for entry in obj["keep_indices"]:
        idx = _as_index(entry)
        if idx is None or not 0 <= idx < n:
            invalid.append(entry)
        else:
            valid.add(idx)
    return sorted(valid), invalid


def _as_index(entry: Any) -> int | None:
    if isinstance(entry, bool):  # bool is an int subclass; True is not "fragment 1"
        return None
    if isinstance(entry, int):
        return entry
    if isinstance(entry, float) and entry.is_integer():
        return int(entry)
    if isinstance(entry, str) and entry.strip().lstrip("-").isdigit():
        return int(entry.strip())
    return None
