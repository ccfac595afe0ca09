"""Query NER under fidelity.extraction_replies=released: the passage NER prompt applied to the
question without a schema, its free-text reply read the released way; a reply it cannot read
leaves the question with atom seeds only (as released) and is reported as the question's error."""
from __future__ import annotations

import json

from atomicrag import AtomicRAG
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.protocol import ChatRequest


def _rag(replies: str, seen: list[ChatRequest]) -> AtomicRAG:
    def responder(req: ChatRequest, attempt: int) -> str:
        seen.append(req)
        question = req.messages[-1]["content"]
        if "Curie" in question:
            return 'Sure: {"named_entities": ["Marie Curie"]}'
        return "I see no names in this question."

    cfg = {"embedder": "fake", "reader": {"name": "none"}, "sieve": {"name": "none"},
           "decompose": {"name": "none"}, "retriever": {"query_entities": "llm"},
           "fidelity": {"extraction_replies": replies, "budgets": replies if replies == "released" else "own"}}
    rag = AtomicRAG(cfg, llm=FakeLLM(responses=responder), progress=False)
    rag.index(["Marie Curie was born in Warsaw.", "Warsaw is the capital of Poland."])
    return rag


def test_free_text_query_ner_is_read_and_an_unreadable_one_is_a_question_error() -> None:
    seen: list[ChatRequest] = []
    rag = _rag("released", seen)
    found, lost = rag.search(["Where was Marie Curie born?", "What is the capital?"])
    rag.close()
    ner = [r for r in seen if r.module == "retrieve_ner"]
    assert len(ner) == 2 and all(r.schema is None and r.max_tokens is None for r in ner)
    assert found.entities_extracted == ["Marie Curie"] and not found.errors
    assert lost.entities_extracted == [] and lost.items  # atom seeds still retrieve
    assert len(lost.errors) == 1 and lost.errors[0].startswith("retrieve_ner: released reading found no entities")


def test_the_structured_reading_sends_the_schema_and_its_budget() -> None:
    from atomicrag.prompts import ner

    seen: list[ChatRequest] = []

    def responder(req: ChatRequest, attempt: int) -> str:
        seen.append(req)
        return json.dumps({"named_entities": ["Warsaw"]})

    rag = AtomicRAG({"embedder": "fake", "reader": {"name": "none"}, "sieve": {"name": "none"},
                     "decompose": {"name": "none"}, "retriever": {"query_entities": "llm"}},
                    llm=FakeLLM(responses=responder), progress=False)
    rag.index(["Marie Curie was born in Warsaw."])
    res = rag.search("Where is Warsaw?")
    rag.close()
    req = [r for r in seen if r.module == "retrieve_ner"][-1]
    assert req.schema == ner.SCHEMA and req.max_tokens == rag.config.retriever.query_ner_max_tokens
    assert res.entities_extracted == ["Warsaw"] and not res.errors
