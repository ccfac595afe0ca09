"""Vocabulary filter for the ``vocabulary`` atomizer (library README's Q-Iter system).

The corpus-wide candidate terms (NER spans, noun chunks, frequent n-grams) are sent in
batches; the model returns the ones that are real entities or key concepts of the domain.
Only terms from the batch are accepted, so the model cannot add new vocabulary.
"""
from __future__ import annotations

import json
from typing import Any

from atomicrag.prompts._common import PromptParseError, clean_str

VERSION = "vocabulary-v1"

SYSTEM = (
    "You clean up an automatically collected list of candidate terms from a document collection. "
    "Keep a term when it names a specific entity (person, place, organisation, work, event, date) "
    "or a key concept of the collection's subject (for example a disease, a treatment, a "
    "technical term). Drop fragments, generic words, phrases that are not names, and broken "
    "n-grams. Copy the kept terms exactly as given. "
    'Reply with JSON only: {"entities": ["...", "..."]}.'
)

TEMPLATE = "Candidate terms:\n{terms}"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"entities": {"type": "array", "items": {"type": "string"}}},
    "required": ["entities"],
    "additionalProperties": False,
}


def build_messages(terms: list[str]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TEMPLATE.format(terms=json.dumps(terms, ensure_ascii=False))},
    ]


def parse(obj: Any, candidates: list[str]) -> list[str]:
    """The kept candidates, in candidate order; case-insensitive match, unknown terms ignored."""
    if isinstance(obj, dict):
        items = obj.get("entities")
    elif isinstance(obj, list):
        items = obj
    else:
        raise PromptParseError(f"vocabulary reply must be an object, got {type(obj).__name__}")
    if not isinstance(items, list):
        raise PromptParseError("vocabulary reply has no 'entities' list")
    kept = {clean_str(x).lower() for x in items}
    return [c for c in candidates if c.lower() in kept]
