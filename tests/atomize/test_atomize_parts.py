"""Prompt modules and the term matcher."""
from __future__ import annotations

import json

import jsonschema
import pytest

from atomicrag.atomize.matcher import TermMatcher
from atomicrag.prompts import extraction, ner, vocabulary
from atomicrag.prompts._common import PromptParseError


@pytest.mark.parametrize("mod", [ner, extraction, vocabulary])
def test_prompt_modules_have_the_contract(mod):
    assert mod.VERSION and mod.TEMPLATE and mod.SCHEMA
    jsonschema.Draft202012Validator.check_schema(mod.SCHEMA)


def test_examples_validate_against_their_schemas():
    jsonschema.validate(json.loads(ner.EXAMPLE_REPLY), ner.SCHEMA)
    jsonschema.validate(json.loads(extraction.EXAMPLE_REPLY), extraction.SCHEMA)


def test_build_messages_put_the_passage_last():
    msgs = extraction.build_messages("Some text.", ["Some"], title="T")
    assert msgs[0]["role"] == "system" and msgs[-1]["role"] == "user"
    assert "T\nSome text." in msgs[-1]["content"] and '["Some"]' in msgs[-1]["content"]
    assert ner.build_messages("x")[-1]["content"].endswith("x")


def test_ner_parse_cleans_and_dedupes():
    assert ner.parse({"named_entities": [" Paris ", "Paris", "", 1999, None, "New  York"]}) == \
        ["Paris", "1999", "New York"]
    assert ner.parse(["a"]) == ["a"]
    with pytest.raises(PromptParseError):
        ner.parse("nope")


def test_extraction_parse_drops_bad_triples_and_checks_alignment():
    ext = extraction.parse({"triples": [["a", "b", "c"], ["a", "b"], ["", "x", "y"]],
                            "knowledge_fragments": ["One.", "  ", "Two."],
                            "fragment_entities": [["a"], [], ["c"]]})
    assert ext.triples == [("a", "b", "c")] and ext.dropped_triples == 2
    assert ext.fragments == ["One.", "Two."] and ext.fragment_entities == [["a"], ["c"]] and ext.aligned
    bad = extraction.parse({"triples": [], "knowledge_fragments": ["One.", "Two."], "fragment_entities": [["a"]]})
    assert not bad.aligned and bad.stray_entities == ["a"] and bad.fragment_entities == [[], []]
    with pytest.raises(PromptParseError):
        extraction.parse({"triples": []})


def test_vocabulary_parse_keeps_only_candidates():
    assert vocabulary.parse({"entities": ["paris", "Mars", "France"]}, ["Paris", "France", "the"]) == \
        ["Paris", "France"]


def test_matcher_longest_first_and_word_boundaries():
    m = TermMatcher(["new york", "york city council", "city", "art", "New York City"])
    text = "The new york city council met; a party of art lovers."
    found = [text[a:b] for a, b, _ in m.find(text)]
    # "new york city" (13 chars) loses to "york city council" (17 chars); "art" not inside "party"
    assert found == ["york city council", "art"]
    m2 = TermMatcher(["new york", "new york city"])
    assert [t for _, _, t in m2.find("I love New York City.")] == [1]


def test_matcher_ignores_punctuation_and_case_like_canonical_keys():
    m = TermMatcher(["St. Maurice's Abbey", "Lothair II"])
    text = "abbot of st maurice s abbey and LOTHAIR-II."
    assert [text[a:b] for a, b, _ in m.find(text)] == ["st maurice s abbey", "LOTHAIR-II"]


def test_matcher_tie_prefers_leftmost():
    m = TermMatcher(["ab cd", "cd ef"])
    assert [t for _, _, t in m.find("ab cd ef")] == [0]
