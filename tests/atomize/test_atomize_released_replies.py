"""The llm atomizer under fidelity.extraction_replies=released: asked without a schema, never
re-asked, read the released way; an unreadable reply is an empty result that is counted."""
from __future__ import annotations

import json

from atomicrag.atomize.llm import LLMAtomizer
from atomicrag.core.config import AtomizerConfig
from atomicrag.engine.failures import summarize_run
from atomicrag.llm.protocol import ChatRequest, ChatResult

from .helpers import KB, PASSAGE_A, PASSAGE_B, ScriptedLLM, chunk, is_ner, passage_of


def released(llm, **kw) -> LLMAtomizer:
    # every chunk may fail here; the failure budget has its own test in test_atomize_llm.py
    return LLMAtomizer(AtomizerConfig(name="llm", max_chunk_failures_frac=1.0), llm, progress=False,
                       extraction_replies="released", **kw)


def text(s: str, finish: str = "stop") -> ChatResult:
    return ChatResult(text=s, finish_reason=finish)


def test_free_text_is_read_without_schema_and_without_re_asking() -> None:
    def script(req: ChatRequest) -> ChatResult:
        entry = KB[passage_of(req)]
        if is_ner(req):
            # chunk B's NER reply is prose: released, it reads as no entities and extraction goes on
            return text("No entities here." if passage_of(req) == PASSAGE_B
                        else "Entities: " + json.dumps({"named_entities": entry["ner"]}))
        return text("```\n" + json.dumps(entry["ext"]) + "\n```")

    llm = ScriptedLLM(script)
    res = released(llm).atomize([chunk(0, PASSAGE_A), chunk(1, PASSAGE_B)])
    assert all(r.schema is None for r in llm.requests)
    assert len(llm.requests) == 4  # one NER and one extraction per chunk: nothing re-asked
    assert not res.failures
    assert [a.text for a in res.atoms] == (KB[PASSAGE_A]["ext"]["knowledge_fragments"]
                                           + KB[PASSAGE_B]["ext"]["knowledge_fragments"])
    assert res.stats["released_fallback_ner"] == 1 and res.stats["released_fallback_extraction"] == 0
    ext_b = [r for r in llm.requests if not is_ner(r) and passage_of(r) == PASSAGE_B][0]
    assert ext_b.messages[-1]["content"].endswith("Entities:\n[]")


def test_an_unreadable_extraction_is_an_empty_chunk_counted_and_failing_the_run() -> None:
    def script(req: ChatRequest) -> ChatResult:
        if is_ner(req):
            return text(json.dumps({"named_entities": KB[passage_of(req)]["ner"]}))
        return text("I cannot do that.")

    res = released(ScriptedLLM(script)).atomize([chunk(0, PASSAGE_A)])
    assert res.atoms == [] and not res.failures and res.stats["released_fallback_extraction"] == 1
    summary = summarize_run(0.0, {}, [], {"chunks": 1, **res.stats})
    assert summary["status"] == "failed"
    assert summary["failures"]["released_fallbacks"] == {"ner": 0, "extraction": 1}
    assert "extraction replies were unreadable" in summary["failures"]["exceeded"][0]
    # under a threshold that allows it, the run finishes and still reports the count
    ok = summarize_run(1.0, {}, [], {"chunks": 1, **res.stats})
    assert ok["status"] == "finished" and ok["failures"]["released_fallbacks"]["extraction"] == 1


def test_entity_lists_are_aligned_by_position_not_repaired_from_the_text() -> None:
    ext = {"triples": [["Teutberga", "married", "Lothair II"]],
           "knowledge_fragments": ["Teutberga died in 875.", "Teutberga married Lothair II."],
           "fragment_entities": [["Teutberga", "875"]]}

    def script(req: ChatRequest) -> ChatResult:
        return text(json.dumps({"named_entities": ["Teutberga", "Lothair II", "875"]}) if is_ner(req)
                    else json.dumps(ext))

    res = released(ScriptedLLM(script)).atomize([chunk(0, PASSAGE_A)])
    # released: the second fragment gets an empty list; the structured reading re-matches the
    # entity strings in the text and would give it Teutberga and Lothair II
    assert [a.entities for a in res.atoms] == [["Teutberga", "875"], []]
    assert res.stats["positional_alignment"] == 1 and res.stats["repaired_alignment"] == 0


def test_a_failed_request_is_still_a_failed_chunk() -> None:
    """A transport/HTTP failure is not a reply to read: the chunk fails and the next run retries it."""
    res = released(ScriptedLLM(lambda req: ChatResult(error="connection refused"))).atomize([chunk(0, PASSAGE_A)])
    assert [f.stage for f in res.failures] == ["ner"]


def test_released_budgets_send_no_cap_and_change_the_cache_key() -> None:
    llm = ScriptedLLM(lambda req: text(json.dumps({"named_entities": []}) if is_ner(req)
                                       else json.dumps(KB[PASSAGE_A]["ext"])))
    capped, uncapped = released(llm), released(llm, uncapped=True)
    uncapped.atomize([chunk(0, PASSAGE_A)])
    assert {r.max_tokens for r in llm.requests} == {None}
    structured = LLMAtomizer(AtomizerConfig(name="llm"), llm, progress=False)
    prints = [json.dumps(a.fingerprint(), sort_keys=True) for a in (structured, capped, uncapped)]
    assert len(set(prints)) == 3


def test_reference_code_reaches_the_atomizer_through_the_engine() -> None:
    from atomicrag.core.config import to_dataclass
    from atomicrag.engine.engine import Engine
    from atomicrag.harness.experiments import compose_experiment

    cfg = to_dataclass(compose_experiment("table2/medical_full", ["llm=fake", "fidelity.prompts=own"]))
    assert cfg.fidelity.extraction_replies == "released" and cfg.fidelity.budgets == "released"
    atomizer = Engine(cfg).atomizer(progress=False)
    assert atomizer.released_replies and atomizer.uncapped and atomizer.retries == 0
    own = to_dataclass(compose_experiment("table2/medical_full", ["llm=fake", "fidelity=paper", "fidelity.prompts=own"]))
    atomizer = Engine(own).atomizer(progress=False)
    assert not atomizer.released_replies and not atomizer.uncapped
