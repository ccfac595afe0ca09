"""Named-entity recognition on one passage (paper section 3.1, first LLM call per chunk).

The reply lists the salient entities of the passage; the extraction prompt then receives
them, so that triples and atoms are anchored on the same names.
"""
from __future__ import annotations

from typing import Any

from atomicrag.prompts._common import PromptParseError, clean_str, dedupe
from atomicrag.prompts.released import ReleasedPrompts

VERSION = "ner-v1"

SYSTEM = (
    "You find the named entities in a passage. Named entities are specific people, places, "
    "organisations, works, events, dates, quantities and domain terms (for example diseases, "
    "drugs, treatments) that a reader could look up. Copy each entity as it is written in the "
    "passage. Do not invent entities and do not list pronouns or generic words. "
    'Reply with JSON only: {"named_entities": ["...", "..."]}.'
)

# One worked example keeps small models on the format.
EXAMPLE_PASSAGE = (
    "Radio City\nRadio City is India's first private FM radio station and was started on 3 July 2001. "
    "It plays Hindi, English and regional songs."
)
EXAMPLE_REPLY = '{"named_entities": ["Radio City", "India", "FM radio station", "3 July 2001", "Hindi", "English"]}'

TEMPLATE = "Passage:\n{passage}"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "named_entities": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["named_entities"],
    "additionalProperties": False,
}


def passage_text(text: str, title: str = "") -> str:
    """The passage as the model sees it: title on its own line when there is one."""
    return f"{title}\n{text}" if title else text


def build_messages(text: str, title: str = "", released: ReleasedPrompts | None = None) -> list[dict[str, str]]:
    """This project's NER prompt, or the released template when ``released`` is given."""
    if released is not None:
        return released.ner(passage_text(text, title))
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TEMPLATE.format(passage=EXAMPLE_PASSAGE)},
        {"role": "assistant", "content": EXAMPLE_REPLY},
        {"role": "user", "content": TEMPLATE.format(passage=passage_text(text, title))},
    ]


def parse(obj: Any) -> list[str]:
    """The entity strings of a reply, cleaned and de-duplicated in order.

    A bare list is accepted too (small models sometimes drop the wrapper object).
    """
    if isinstance(obj, dict):
        items = obj.get("named_entities")
    elif isinstance(obj, list):
        items = obj
    else:
        raise PromptParseError(f"NER reply must be an object, got {type(obj).__name__}")
    if not isinstance(items, list):
        raise PromptParseError("NER reply has no 'named_entities' list")
    return dedupe([clean_str(x) for x in items])
