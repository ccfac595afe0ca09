"""The llm atomizer: parsing, repair, retries, failures, resume."""
from __future__ import annotations

import json

import pytest

from atomicrag.atomize.llm import LLMAtomizer
from atomicrag.core.config import AtomizerConfig
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.protocol import ChatRequest, ChatResult

from .helpers import KB, PASSAGE_A, PASSAGE_B, ScriptedLLM, chunk, facts_script, is_ner, ok, passage_of


def make(llm, **kw) -> LLMAtomizer:
    # these tests look at how failures are reported, so every chunk may fail; the failure budget
    # (default 0.25) has its own test below
    return LLMAtomizer(AtomizerConfig(name="llm", max_chunk_failures_frac=1.0), llm, progress=False, **kw)


def test_valid_replies_become_atoms_with_provenance():
    llm = ScriptedLLM(facts_script(KB))
    res = make(llm).atomize([chunk(0, PASSAGE_A), chunk(1, PASSAGE_B)])
    assert [a.text for a in res.atoms] == KB[PASSAGE_A]["ext"]["knowledge_fragments"] + \
        KB[PASSAGE_B]["ext"]["knowledge_fragments"]
    a = res.atoms[0]
    assert (a.id, a.chunk_id, a.passage_id, a.entities) == ("c0#a0", "c0", "p0", ["Teutberga", "875"])
    assert a.span is None  # a rewritten atom is not a slice of the chunk
    last = res.atoms[-1]
    assert last.span == (0, len(PASSAGE_B))  # a literal slice keeps its span
    assert [(t.subject, t.object, t.chunk_id) for t in res.triples][-1] == ("Lothair II", "Lotharingia", "c1")
    assert res.llm_calls == 4 and not res.failures
    # NER of both chunks in one batch call, then extraction of both in another
    assert llm.chat_calls == 2 and all(r.module == "atomize" for r in llm.requests)
    # the extraction prompt carries the NER entities
    ext_req = next(r for r in llm.requests if not is_ner(r))
    assert json.dumps(KB[PASSAGE_A]["ner"]) in ext_req.messages[-1]["content"]


def test_malformed_reply_is_repaired_or_retried_by_the_llm_layer():
    """Through the real FakeLLM parse path: fenced JSON with a trailing comma is repaired;
    prose with no JSON is retried by the layer."""
    good = KB[PASSAGE_A]["ext"]
    ner_reply = json.dumps({"named_entities": KB[PASSAGE_A]["ner"]})
    fenced = "Sure!\n```json\n" + json.dumps(good)[:-1] + ",}\n```"

    def responder(req: ChatRequest, attempt: int) -> str:
        if is_ner(req):
            return "I think the entities are..." if attempt == 0 else ner_reply
        return fenced

    fake = FakeLLM(responses=responder, max_retries=2)
    res = make(fake).atomize([chunk(0, PASSAGE_A)])
    assert [a.text for a in res.atoms] == good["knowledge_fragments"]
    assert not res.failures
    assert fake.calls == 3  # NER: 1 bad + 1 good attempt; extraction: 1 (repaired, not retried)
    assert res.llm_calls == 2 and res.stats["llm_attempts"] == 3


def test_truncated_reply_keeps_complete_atoms_only():
    full = json.dumps(KB[PASSAGE_A]["ext"])
    cut = full[: full.index("Teutberga married") + 5]  # mid third fragment, before fragment_entities

    def script(req: ChatRequest) -> ChatResult:
        if is_ner(req):
            return ok({"named_entities": KB[PASSAGE_A]["ner"]})
        return ChatResult(text=cut, parsed=None, error="invalid JSON", finish_reason="length")

    res = make(ScriptedLLM(script)).atomize([chunk(0, PASSAGE_A)])
    assert [a.text for a in res.atoms] == KB[PASSAGE_A]["ext"]["knowledge_fragments"][:2]
    assert res.stats["salvaged"] == 1
    # fragment_entities were cut off: rebuilt from the chunk's entities found in each atom
    assert res.stats["repaired_alignment"] == 1
    assert res.atoms[0].entities == ["Teutberga", "875"]
    assert res.atoms[1].entities == ["Teutberga", "Lotharingia"]


def test_truncated_reply_parsed_leniently_still_drops_cut_atom():
    """The LLM layer's lenient parse keeps half an atom; finish_reason=length makes us re-read."""
    full = json.dumps(KB[PASSAGE_B]["ext"] | {"knowledge_fragments": ["Lothair II was king.", "Lothair II ruled"]})
    cut = full[: full.index("Lothair II ruled") + 8]
    lenient = {"triples": [], "knowledge_fragments": ["Lothair II was king.", "Lothair"], "fragment_entities": []}

    def script(req: ChatRequest) -> ChatResult:
        if is_ner(req):
            return ok({"named_entities": ["Lothair II"]})
        return ChatResult(text=cut, parsed=lenient, finish_reason="length")

    res = make(ScriptedLLM(script)).atomize([chunk(1, PASSAGE_B)])
    assert [a.text for a in res.atoms] == ["Lothair II was king."]


def test_misaligned_fragment_entities_are_repaired_and_counted():
    ext = dict(KB[PASSAGE_A]["ext"])
    ext["fragment_entities"] = [["Teutberga"]]  # one list for three fragments
    kb = {PASSAGE_A: {"ner": KB[PASSAGE_A]["ner"], "ext": ext}}
    res = make(ScriptedLLM(facts_script(kb))).atomize([chunk(0, PASSAGE_A)])
    assert res.stats["repaired_alignment"] == 1
    assert [a.entities for a in res.atoms] == [["Teutberga", "875"], ["Teutberga", "Lotharingia"],
                                               ["Teutberga", "Lothair II"]]


def test_always_malformed_chunk_is_a_reported_failure():
    def script(req: ChatRequest) -> ChatResult:
        if PASSAGE_B in passage_of(req) and not is_ner(req):
            return ChatResult(text="no idea", parsed=None, error="failed after 4 attempt(s): no JSON")
        return facts_script(KB)(req)

    llm = ScriptedLLM(script)
    res = make(llm, retries=2).atomize([chunk(0, PASSAGE_A), chunk(1, PASSAGE_B)])
    assert [f.chunk_id for f in res.failures] == ["c1"]
    assert res.failures[0].stage == "extraction" and "no JSON" in res.failures[0].reason
    assert {a.chunk_id for a in res.atoms} == {"c0"}
    assert res.stats["failed_chunks"] == 1
    # c0: 2 calls; c1: NER + 3 extraction attempts (1 + 2 retries)
    assert res.llm_calls == 6 == len(llm.requests)
    retried = [r for r in llm.requests if not is_ner(r) and PASSAGE_B in passage_of(r)]
    assert [(r.seed, r.temperature) for r in retried] == [(0, 0.0), (1, 0.7), (2, 0.7)]


def test_empty_fragments_count_as_failure():
    kb = {PASSAGE_A: {"ner": [], "ext": {"triples": [], "knowledge_fragments": [], "fragment_entities": []}}}
    res = make(ScriptedLLM(facts_script(kb)), retries=0).atomize([chunk(0, PASSAGE_A)])
    assert len(res.failures) == 1 and not res.atoms


def test_failure_budget_aborts():
    def script(req: ChatRequest) -> ChatResult:
        return ChatResult(text="", error="connection refused")

    at = LLMAtomizer(AtomizerConfig(name="llm", max_chunk_failures_frac=0.0), ScriptedLLM(script),
                     progress=False, retries=0)
    with pytest.raises(RuntimeError, match="max_chunk_failures_frac"):
        at.atomize([chunk(0, PASSAGE_A)])


def test_resume_skips_finished_chunks(tmp_path):
    ckpt = tmp_path / "ckpt.jsonl"
    chunks = [chunk(0, PASSAGE_A), chunk(1, PASSAGE_B)]
    llm = ScriptedLLM(facts_script(KB))
    llm.fail_on_chat_call = 3  # batch 1 (NER + extraction) finishes, batch 2 is interrupted
    with pytest.raises(KeyboardInterrupt):
        make(llm, checkpoint_path=ckpt, batch_size=1).atomize(chunks)
    assert [json.loads(x)["chunk_id"] for x in ckpt.read_text().splitlines()] == ["c0"]

    llm2 = ScriptedLLM(facts_script(KB))
    res = make(llm2, checkpoint_path=ckpt, batch_size=1).atomize(chunks)
    assert {passage_of(r) for r in llm2.requests} == {PASSAGE_B}  # c0 not asked again
    assert res.stats["resumed_chunks"] == 1 and res.stats["llm_calls_this_run"] == 2
    assert res.llm_calls == 4 and len(res.atoms) == 4


def test_torn_checkpoint_line_is_dropped(tmp_path):
    ckpt = tmp_path / "ckpt.jsonl"
    make(ScriptedLLM(facts_script(KB)), checkpoint_path=ckpt).atomize([chunk(0, PASSAGE_A)])
    good = ckpt.read_text()
    ckpt.write_text(good + '{"chunk_id": "c1", "status": "o')  # crash mid-write
    llm = ScriptedLLM(facts_script(KB))
    res = make(llm, checkpoint_path=ckpt).atomize([chunk(0, PASSAGE_A), chunk(1, PASSAGE_B)])
    assert res.stats["checkpoint_torn_lines"] == 1 and len(res.atoms) == 4
    assert all(json.loads(x) for x in ckpt.read_text().splitlines())


def test_fake_llm_end_to_end_produces_schema_shaped_atoms():
    res = make(FakeLLM()).atomize([chunk(0, PASSAGE_A), chunk(1, PASSAGE_B)])
    # the fake LLM answers every schema, so no chunk may fail and each chunk yields atoms
    assert res.failures == []
    assert {a.chunk_id for a in res.atoms} == {"c0", "c1"}
    assert all(isinstance(a.text, str) and a.text and isinstance(a.entities, list) for a in res.atoms)


def test_without_ka_the_chunk_is_the_node_with_the_same_entities_and_triples():
    """Table 2 "w/o KA" (atomizer.atom_unit=chunks): the LLM's extraction is kept, only the atoms go."""
    chunks = [chunk(0, PASSAGE_A), chunk(1, PASSAGE_B)]
    full = make(ScriptedLLM(facts_script(KB))).atomize(chunks)
    llm = ScriptedLLM(facts_script(KB))
    no_ka = LLMAtomizer(AtomizerConfig(name="llm", atom_unit="chunks"), llm, progress=False).atomize(chunks)
    assert [a.text for a in no_ka.atoms] == [PASSAGE_A, PASSAGE_B]  # one node per chunk
    assert [(a.id, a.passage_id) for a in no_ka.atoms] == [("c0#a0", "p0"), ("c1#a0", "p1")]
    assert no_ka.triples == full.triples  # relevance edges come from the same triples
    for i, c in enumerate(chunks):  # every entity of the chunk's atoms (and its NER) links the chunk
        atom_ents = {e for a in full.atoms if a.chunk_id == c.id for e in a.entities}
        assert atom_ents <= set(no_ka.atoms[i].entities)
        assert set(KB[c.text]["ner"]) <= set(no_ka.atoms[i].entities)
    assert llm.chat_calls == 2  # the same two LLM calls per chunk batch
    with pytest.raises(ValueError, match="atom_unit"):
        AtomizerConfig(atom_unit="sentences")
