"""Repair of the JSON mistakes models make, and schema validation."""
from __future__ import annotations

import pytest

from atomicrag.llm.json_repair import ReplyParseError, parse_reply, repair_json, salvage_json, schema_error

ENTITIES = {
    "type": "object",
    "properties": {"named_entities": {"type": "array", "items": {"type": "string"}}},
    "required": ["named_entities"],
}
TRIPLES = {
    "type": "object",
    "properties": {
        "triples": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3},
        },
        "done": {"type": "boolean"},
    },
    "required": ["triples"],
}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"named_entities": ["Paris", "France"]}', ["Paris", "France"]),
        ('```json\n{"named_entities": ["Paris"]}\n```', ["Paris"]),
        ('Sure! Here is the JSON:\n{"named_entities": ["Paris"]}\nHope it helps {really}.', ["Paris"]),
        ('{"named_entities": ["Paris", "France",],}', ["Paris", "France"]),
        ("{'named_entities': ['Paris', 'Côte d'Ivoire']}", ["Paris", "Côte d'Ivoire"]),
        ('{"named_entities": ["Paris", "Fra', ["Paris", "Fra"]),  # truncated inside a string
        ('{"named_entities": ["Paris", ', ["Paris"]),  # truncated after a comma
        ('```json\n{"named_entities": ["Paris"', ["Paris"]),  # unclosed fence and brackets
        ('{named_entities: ["Paris" "Lyon"]}', ["Paris", "Lyon"]),  # bare key, missing comma
        ('["Paris", "Lyon"]', ["Paris", "Lyon"]),  # bare array for a one-array object schema
        ('{"named_entities": ["a\\nb", "\\u00e9t\\u00e9"]}', ["a\nb", "été"]),
        ('{"named_entities": [] // none found\n}', []),
    ],
)
def test_repairs_entities(text: str, expected: list[str]) -> None:
    assert parse_reply(text, ENTITIES) == {"named_entities": expected}


def test_python_literals_and_nested_truncation() -> None:
    text = "{'triples': [['Obama', 'born in', 'Hawaii']], 'done': True"
    assert parse_reply(text, TRIPLES) == {"triples": [["Obama", "born in", "Hawaii"]], "done": True}
    cut = '{"triples": [["Obama", "born in", "Hawaii"], ["Obama", "pres'
    # The cut-off triple has 2 items and violates minItems: a clear schema error, not junk.
    with pytest.raises(ReplyParseError, match="schema"):
        parse_reply(cut, TRIPLES)


def test_values_and_literals() -> None:
    assert repair_json("{'a': None, 'b': False, 'c': 1.5, 'd': -2, 'e': 3.}") == {
        "a": None, "b": False, "c": 1.5, "d": -2, "e": 3,
    }
    assert repair_json('{"a": , "b": 1}') == {"a": None, "b": 1}
    assert repair_json('{"a": {"b": [1, 2, {"c": "x') == {"a": {"b": [1, 2, {"c": "x"}]}}
    assert repair_json('{"a": 1, "b"') == {"a": 1}  # dangling key dropped


def test_prefers_a_candidate_that_validates() -> None:
    text = 'Example: {"x": 1}. Answer: {"named_entities": ["Rome"]}'
    assert parse_reply(text, ENTITIES) == {"named_entities": ["Rome"]}


@pytest.mark.parametrize("text", ["", "   ", "no json here at all", "{]"])
def test_unparseable_raises(text: str) -> None:
    with pytest.raises(ReplyParseError):
        parse_reply(text, ENTITIES)


def test_schema_mismatch_message_names_the_path() -> None:
    with pytest.raises(ReplyParseError, match="named_entities"):
        parse_reply('{"named_entities": "Paris"}', ENTITIES)
    assert schema_error({"named_entities": ["a"]}, ENTITIES) is None


def test_free_text_passes_through() -> None:
    assert parse_reply("Answer: Paris", None) == "Answer: Paris"


def test_fragments_inside_a_wrong_object_are_not_taken_as_the_answer() -> None:
    # Seen from SmolLM2 without a grammar: it echoed a schema. Its inner ["type"] must not be
    # wrapped into {"named_entities": ["type"]}.
    text = '{"type": "object", "properties": {"name": {"type": "string", "required": ["type"]}}}'
    with pytest.raises(ReplyParseError, match="schema"):
        parse_reply(text, ENTITIES)


def test_salvage_json_keeps_complete_elements():
    obj, cut = salvage_json('```json\n{"a": ["x", "y", "z is cu')
    assert cut and obj == {"a": ["x", "y"]}
    obj, cut = salvage_json('here: {"a": 1} thanks')
    assert not cut and obj == {"a": 1}
    assert salvage_json("nothing here") is None
    # an inner list cut short is closed as it is; extraction.parse then drops a 2-item triple
    obj, _ = salvage_json('{"a": [["s", "p", "o"], ["s2", "p2"')
    assert obj == {"a": [["s", "p", "o"], ["s2", "p2"]]}
    # the cut-off element is dropped at any depth, with its key; a bare word the text ends in too
    assert salvage_json('{"a": [["s", "p", "o"], ["s2", "p') == ({"a": [["s", "p", "o"], ["s2"]]}, True)
    assert salvage_json('{"a": 1, "b": "half') == ({"a": 1}, True)
    assert salvage_json('{"a": 1, "b": tr') == ({"a": 1}, True)
    assert salvage_json('{"a": [1, 2') == ({"a": [1, 2]}, True)
    # the layer's own lenient parse keeps the cut string: the two modes differ only there
    assert repair_json('{"a": ["x", "y", "z is cu') == {"a": ["x", "y", "z is cu"]}
