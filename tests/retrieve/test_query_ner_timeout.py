"""``retriever.query_ner_timeout_s``: the released query NER gives a question no entities when its
reply has not come 60 s after the task started; ours does the same when asked to, and names the
timeout in the question's errors (atom seeds still retrieve)."""
from __future__ import annotations

import json

from atomicrag import AtomicRAG
from atomicrag.llm.openai_client import OpenAIClient
from tests.llm.llm_stub_server import StubServer, completion

DOCS = ["Marie Curie was born in Warsaw.", "Warsaw is the capital of Poland."]


def _search(timeout_s: float | None) -> tuple[list, StubServer]:
    stub = StubServer()
    stub.thread.start()
    # a question naming Warsaw gets its reply after 2 s, the other at once
    reply = "Sure: " + json.dumps({"named_entities": ["Marie Curie"]})
    stub.responder = lambda body, n: (200, completion(reply),
                                      2.0 if "Warsaw" in body["messages"][-1]["content"] else 0.0)
    cfg = {"embedder": "fake", "reader": {"name": "none"}, "sieve": {"name": "none"},
           "decompose": {"name": "none"},
           "retriever": {"query_entities": "llm", "query_ner_timeout_s": timeout_s},
           "fidelity": {"extraction_replies": "released", "budgets": "released"}}
    try:
        client = OpenAIClient(stub.base_url, "stub-model", api_key_env="ATOMICRAG_TEST_KEY", max_retries=2)
        rag = AtomicRAG(cfg, llm=client, progress=False)
        rag.index(DOCS)
        results = rag.search(["Where was Marie Curie born?", "Is Warsaw a capital?"])
        rag.close()
    finally:
        stub.httpd.shutdown()
        stub.httpd.server_close()
    return results, stub


def test_a_query_ner_reply_after_the_timeout_leaves_no_entities_and_is_named() -> None:
    (in_time, late), stub = _search(0.5)
    assert in_time.entities_extracted == ["Marie Curie"] and not in_time.errors
    assert late.entities_extracted == [] and late.items  # seeded by its atoms alone
    assert len(late.errors) == 1 and "query_ner_timeout_s=0.5" in late.errors[0]
    assert len(stub.bodies) == 2, "the timed-out query NER request was sent again"


def test_without_a_timeout_the_late_query_ner_reply_is_read() -> None:
    (_, late), _ = _search(None)
    assert late.entities_extracted == ["Marie Curie"] and not late.errors
