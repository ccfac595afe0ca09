"""Unified extraction of triples and knowledge atoms from one passage (paper section 3.1).

Given the passage and its entities (from the NER prompt), the model writes
``triples`` (subject, predicate, object), ``knowledge_fragments`` (the atoms) and
``fragment_entities`` (for each atom, by index, the entities it mentions).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from atomicrag.prompts._common import PromptParseError, clean_str, dedupe
from atomicrag.prompts.ner import passage_text
from atomicrag.prompts.released import ReleasedPrompts

VERSION = "extraction-v2"

SYSTEM = """You turn a passage into a small knowledge base. Return one JSON object with three keys.

"triples": facts as [subject, predicate, object]. Subjects and objects should be entities from the
given list whenever possible; the predicate is a short verb phrase.

"knowledge_fragments": knowledge atoms, i.e. short statements that together cover every fact in
the passage. Rules for each atom:
- it states one idea (one fact or one tightly connected piece of information);
- it can be understood alone: name people, places and things instead of using pronouns such as
  "he", "she", "it", "they" or "this";
- it keeps numbers, dates, amounts and time spans exactly as the passage gives them;
- it does not repeat what another atom already says.

"fragment_entities": one list per atom, in the same order as "knowledge_fragments", with the
entities that the atom mentions, written as in the atom.

Reply with the JSON object only."""

EXAMPLE_PASSAGE = (
    "Radio City\nRadio City is India's first private FM radio station and was started on 3 July 2001. "
    "It plays Hindi, English and regional songs."
)
EXAMPLE_ENTITIES = ["Radio City", "India", "FM radio station", "3 July 2001", "Hindi", "English"]
EXAMPLE_REPLY = json.dumps(
    {
        "triples": [
            ["Radio City", "located in", "India"],
            ["Radio City", "is", "private FM radio station"],
            ["Radio City", "started on", "3 July 2001"],
            ["Radio City", "plays songs in", "Hindi"],
            ["Radio City", "plays songs in", "English"],
        ],
        "knowledge_fragments": [
            "Radio City is the first private FM radio station in India.",
            "Radio City was started on 3 July 2001.",
            "Radio City plays Hindi, English and regional songs.",
        ],
        "fragment_entities": [
            ["Radio City", "India", "FM radio station"],
            ["Radio City", "3 July 2001"],
            ["Radio City", "Hindi", "English"],
        ],
    }
)

TEMPLATE = "Passage:\n{passage}\n\nEntities:\n{entities}"

_STR_LIST = {"type": "array", "items": {"type": "string"}}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "triples": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3},
        },
        # a reply without fragments is a failed chunk (the parser rejects it), so guided decoding
        # is told so too: at least one fragment
        "knowledge_fragments": {**_STR_LIST, "minItems": 1},
        "fragment_entities": {"type": "array", "items": _STR_LIST},
    },
    "required": ["triples", "knowledge_fragments", "fragment_entities"],
    "additionalProperties": False,
}


@dataclass
class Extraction:
    """A parsed reply. ``aligned`` is False when fragment_entities did not match fragments 1:1."""

    triples: list[tuple[str, str, str]] = field(default_factory=list)
    fragments: list[str] = field(default_factory=list)
    fragment_entities: list[list[str]] = field(default_factory=list)
    aligned: bool = True
    dropped_triples: int = 0
    stray_entities: list[str] = field(default_factory=list)  # entities of a misaligned reply


def build_messages(text: str, entities: list[str], title: str = "",
                   released: ReleasedPrompts | None = None) -> list[dict[str, str]]:
    """This project's extraction prompt, or the released unified template when ``released`` is given."""
    if released is not None:
        return released.extraction(passage_text(text, title), list(entities))
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": TEMPLATE.format(passage=EXAMPLE_PASSAGE, entities=json.dumps(EXAMPLE_ENTITIES)),
        },
        {"role": "assistant", "content": EXAMPLE_REPLY},
        {
            "role": "user",
            "content": TEMPLATE.format(
                passage=passage_text(text, title), entities=json.dumps(entities, ensure_ascii=False)
            ),
        },
    ]


def parse(obj: Any) -> Extraction:
    """Normalise a reply: keep well-formed triples, non-empty atoms, and check alignment.

    Triples that are not three non-empty strings are dropped and counted (the schema asks for
    three, but a lenient backend may pass others through). Alignment is only *checked* here;
    the atomizer repairs a misaligned reply from the atom texts.
    """
    if not isinstance(obj, dict):
        raise PromptParseError(f"extraction reply must be an object, got {type(obj).__name__}")
    raw_frags = obj.get("knowledge_fragments")
    if not isinstance(raw_frags, list):
        raise PromptParseError("extraction reply has no 'knowledge_fragments' list")
    raw_triples = obj.get("triples") or []
    raw_fe = obj.get("fragment_entities")
    out = Extraction()
    if not isinstance(raw_triples, list):
        raw_triples = []
    for t in raw_triples:
        parts = [clean_str(x) for x in t] if isinstance(t, list) else []
        if len(parts) == 3 and all(parts):
            out.triples.append((parts[0], parts[1], parts[2]))
        else:
            out.dropped_triples += 1
    # Keep fragment/entity pairs together while dropping empty fragments, so that a valid
    # alignment survives the cleaning.
    aligned = isinstance(raw_fe, list) and len(raw_fe) == len(raw_frags)
    aligned = aligned and all(isinstance(x, list) for x in raw_fe)
    for i, frag in enumerate(raw_frags):
        text = clean_str(frag)
        if not text:
            continue
        out.fragments.append(text)
        ents = raw_fe[i] if aligned else []
        out.fragment_entities.append(dedupe([clean_str(e) for e in ents]))
    out.aligned = aligned
    if not aligned and isinstance(raw_fe, list):
        # Keep whatever the model gave, flattened, as candidates for the repair step.
        flat = [clean_str(e) for x in raw_fe if isinstance(x, list) for e in x]
        out.fragment_entities = [[] for _ in out.fragments]
        out.stray_entities = dedupe(flat)
    return out
