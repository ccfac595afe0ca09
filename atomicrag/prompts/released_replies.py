"""The released code's reading of free-text NER and extraction replies (``fidelity.extraction_replies=released``).

The released pipeline asks for NER and the unified extraction without a JSON schema and reads the
reply with regular expressions and Python-literal evaluation; whatever it cannot read becomes an
empty result (no entities, or no triples and no fragments), and nothing is asked again. This
module reproduces that reading, written here from a description of its behaviour:

- a reply cut by the completion budget is first closed: a reply that is valid JSON stays as it
  is; otherwise everything from its last comma on is dropped and the brackets and braces still
  open (outside strings) are closed in order (``close_truncated``);
- NER: the first brace-free object holding a ``"named_entities"`` list (a list with no ``]``
  inside) is evaluated as a Python literal; its string items are kept, duplicates dropped in
  order; anything else, or a failed evaluation, is an empty list;
- extraction: the first brace-free object holding ``"triples"``, ``"knowledge_fragments"`` and
  ``"fragment_entities"`` in that order; failing that the whole reply as JSON (with the older
  ``events``/``event_entities`` keys when ``knowledge_fragments`` is absent); failing that the
  older object shape found the same way; else nothing. Triples keep only three-element ones,
  each item turned into a string, duplicates dropped; fragments are stripped and empty ones
  dropped; the entity lists are cut to the number of fragments, or one empty list per fragment
  when the reply has none, and padded with empty lists later (the alignment is positional).

``_common.python_literal`` (``ast.literal_eval``) stands where the released code calls ``eval``: on every literal the
two agree, and JSON's ``true``/``false``/``null`` fail in both. The one place this reading is
deliberately narrower: an entity "list" of a fragment that is not a list (the released graph
builder would iterate over a string's characters) becomes an empty list and is counted in
``malformed_entity_lists``. Each empty result that came from a reply that could not be read is
reported (``fallback``), so the caller counts it instead of passing it off as "no entities".
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from atomicrag.prompts._common import python_literal

# a {...} with no nested braces that holds "named_entities": [...] (the list has no "]" inside)
_NER_OBJECT = re.compile(r'\{[^{}]*"named_entities"\s*:\s*\[[^\]]*\][^{}]*\}', re.DOTALL)


def _unified_object(fragments_key: str, entities_key: str) -> re.Pattern[str]:
    """``{"triples": [...] ... "<fragments_key>": [...] ... "<entities_key>": [...] ...}``, brace-free at
    its ends; the first two lists end at their first ``]``, the last one lazily."""
    return re.compile(
        r'\{[^{}]*"triples"\s*:\s*\[[^\]]*\]'
        rf'.*?"{fragments_key}"\s*:\s*\[[^\]]*\]'
        rf'.*?"{entities_key}"\s*:\s*\[.*?\][^{{}}]*\}}',
        re.DOTALL,
    )


_UNIFIED_OBJECT = _unified_object("knowledge_fragments", "fragment_entities")
_LEGACY_OBJECT = _unified_object("events", "event_entities")


def close_truncated(text: str) -> str:
    """A reply cut mid-JSON, closed the released way (a valid JSON text is returned unchanged)."""
    try:
        json.loads(text)
        return text
    except json.JSONDecodeError:
        pass
    cut = text.rfind(",")
    if cut != -1:
        text = text[:cut]
    opened: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            opened.append(ch)
        elif ch in "}]" and opened and opened[-1] == {"}": "{", "]": "["}[ch]:
            opened.pop()
    return text + "".join("}" if ch == "{" else "]" for ch in reversed(opened))


@dataclass
class ReleasedNer:
    entities: list[str]
    fallback: str | None = None  # why the reply read as no entities (None: it was read)


def read_ner(text: str, truncated: bool = False) -> ReleasedNer:
    """The entity list of a free-text NER reply, read as the released code reads it."""
    reply = close_truncated(text or "") if truncated else (text or "")
    match = _NER_OBJECT.search(reply)
    if match is None:
        return ReleasedNer([], "no object with a named_entities list in the reply")
    try:
        items = python_literal(match.group())["named_entities"]
        kept = [e for e in items if isinstance(e, str)]
    except Exception as exc:  # the released reading turns any error into an empty list
        return ReleasedNer([], f"named_entities object unreadable: {type(exc).__name__}")
    return ReleasedNer(list(dict.fromkeys(kept)))


@dataclass
class ReleasedExtraction:
    triples: list[tuple[str, str, str]] = field(default_factory=list)
    fragments: list[str] = field(default_factory=list)
    fragment_entities: list[list[str]] = field(default_factory=list)  # padded to the fragments
    fallback: str | None = None  # why the reply read as nothing (None: it was read)
    dropped_triples: int = 0  # entries that were not three items, or repeated
    padded: bool = False  # fewer entity lists than fragments: padded with empty lists
    truncated_lists: bool = False  # more entity lists than fragments: cut
    malformed_entity_lists: int = 0  # a fragment's entity "list" that was not a list


def _keys(obj: Any) -> tuple[Any, Any, Any]:
    if "knowledge_fragments" in obj:
        return obj.get("triples", []), obj.get("knowledge_fragments", []), obj.get("fragment_entities", [])
    return obj.get("triples", []), obj.get("events", []), obj.get("event_entities", [])


def _raw_parts(reply: str) -> tuple[Any, Any, Any] | str:
    """(triples, fragments, entity lists) as found, or why nothing was found."""
    match = _UNIFIED_OBJECT.search(reply)
    if match is None:
        try:
            return _keys(json.loads(reply))
        except Exception:
            match = _LEGACY_OBJECT.search(reply)
            if match is None:
                return "no object with triples, knowledge_fragments and fragment_entities in the reply"
    try:
        return _keys(python_literal(match.group()))
    except Exception as exc:
        return f"extraction object unreadable: {type(exc).__name__}"


def read_extraction(text: str, truncated: bool = False) -> ReleasedExtraction:
    """Triples, fragments and their entity lists of a free-text extraction reply, read as released."""
    reply = close_truncated(text or "") if truncated else (text or "")
    parts = _raw_parts(reply)
    if isinstance(parts, str):
        return ReleasedExtraction(fallback=parts)
    raw_triples, raw_fragments, raw_entities = parts
    try:
        triples: list[tuple[str, str, str]] = []
        seen: set[tuple[str, str, str]] = set()
        dropped = 0
        for t in raw_triples:
            if len(t) != 3:
                dropped += 1
                continue
            key = (str(t[0]), str(t[1]), str(t[2]))
            if key in seen:
                dropped += 1
                continue
            seen.add(key)
            triples.append(key)
        fragments = [f.strip() for f in raw_fragments if f.strip()]
        lists = list(raw_entities[: len(fragments)]) if raw_entities else [[] for _ in fragments]
    except Exception as exc:  # e.g. a fragment that is not a string: the released call returns nothing
        return ReleasedExtraction(fallback=f"extraction reply unreadable: {type(exc).__name__}: {exc}"[:200])
    out = ReleasedExtraction(triples=triples, fragments=fragments, dropped_triples=dropped,
                             truncated_lists=bool(raw_entities) and len(raw_entities) > len(fragments),
                             padded=len(lists) < len(fragments))
    for entry in lists + [[] for _ in range(len(fragments) - len(lists))]:
        if isinstance(entry, list):
            out.fragment_entities.append([e for e in entry if isinstance(e, str)])
        else:
            out.malformed_entity_lists += 1
            out.fragment_entities.append([])
    return out
