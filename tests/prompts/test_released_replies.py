"""fidelity.extraction_replies=released: NER and extraction replies read as the released code reads
them (free text, an empty result where it cannot read one, entity lists aligned by position), and
every such empty result is reported as a fallback rather than passed off as "nothing found"."""
from __future__ import annotations

import json

from atomicrag.prompts.released_replies import close_truncated, read_extraction, read_ner


def test_ner_reads_the_entity_object_out_of_prose_and_keeps_strings_once() -> None:
    reply = 'Here you go:\n{"named_entities": ["Marie Curie", "Warsaw", 1867, "Warsaw"]}\nDone.'
    read = read_ner(reply)
    assert read.entities == ["Marie Curie", "Warsaw"] and read.fallback is None
    # items in Python's single quotes read as well, as the released eval reads them; the key itself
    # must be in double quotes (the released pattern looks for "named_entities")
    assert read_ner("""{"named_entities": ['Paris']}""").entities == ["Paris"]
    assert read_ner("{'named_entities': ['Paris']}").fallback
    # a genuinely empty list is a reading, not a fallback
    assert read_ner('{"named_entities": []}').fallback is None


def test_ner_without_a_readable_object_is_empty_and_says_why() -> None:
    for reply in ("Marie Curie, Warsaw", '["Marie Curie"]', '{"named_entities": ["a", true]}', ""):
        read = read_ner(reply)
        assert read.entities == [] and read.fallback, reply


def test_a_reply_cut_by_the_budget_is_closed_before_it_is_read() -> None:
    cut = '{"named_entities": ["Marie Curie", "Warsaw", "Sorbo'
    assert close_truncated(cut) == '{"named_entities": ["Marie Curie", "Warsaw"]}'
    assert read_ner(cut, truncated=True).entities == ["Marie Curie", "Warsaw"]
    assert read_ner(cut).fallback  # not closed when the reply was not cut
    whole = '{"a": [1, 2]}'
    assert close_truncated(whole) == whole
    # brackets inside strings do not count as open
    assert close_truncated('{"k": ["x]", "y", "z') == '{"k": ["x]", "y"]}'


def test_extraction_reads_triples_fragments_and_positional_entity_lists() -> None:
    obj = {"triples": [["Curie", "born in", "Warsaw"], ["Curie", "born in", "Warsaw"], ["bad", "triple"]],
           "knowledge_fragments": ["Marie Curie was born in Warsaw.", "  ", "She won two Nobel Prizes."],
           "fragment_entities": [["Marie Curie", "Warsaw"]]}
    read = read_extraction("Sure.\n" + json.dumps(obj))
    assert read.fallback is None
    assert read.triples == [("Curie", "born in", "Warsaw")] and read.dropped_triples == 2
    assert read.fragments == ["Marie Curie was born in Warsaw.", "She won two Nobel Prizes."]
    # one list for two fragments: padded with an empty list by position, not re-matched from text
    assert read.fragment_entities == [["Marie Curie", "Warsaw"], []] and read.padded


def test_extraction_cuts_surplus_entity_lists_and_gives_each_fragment_one_when_none_came() -> None:
    obj = {"triples": [], "knowledge_fragments": ["A.", "B."], "fragment_entities": [["x"], ["y"], ["z"]]}
    read = read_extraction(json.dumps(obj))
    assert read.fragment_entities == [["x"], ["y"]] and read.truncated_lists and not read.padded
    obj["fragment_entities"] = []
    assert read_extraction(json.dumps(obj)).fragment_entities == [[], []]
    obj["fragment_entities"] = ["x", ["y"]]  # a string where a list belongs: empty, counted
    read = read_extraction(json.dumps(obj))
    assert read.fragment_entities == [[], ["y"]] and read.malformed_entity_lists == 1


def test_extraction_accepts_the_older_event_keys() -> None:
    obj = {"triples": [["a", "r", "b"]], "events": ["An event happened."], "event_entities": [["a"]]}
    read = read_extraction(json.dumps(obj))
    assert read.fragments == ["An event happened."] and read.fragment_entities == [["a"]]


def test_unreadable_extraction_replies_are_empty_with_a_reason() -> None:
    for reply in ("I could not find anything.",
                  '{"triples": [], "knowledge_fragments": [1, 2], "fragment_entities": []}',
                  '{"triples": [["a","b","c"]], "knowledge_fragments": ["x"], "fragment_entities": [[true]]}'):
        read = read_extraction(reply)
        assert (read.triples, read.fragments, read.fragment_entities) == ([], [], []), reply
        assert read.fallback, reply
