"""``AtomicRAG.retry_failed``: documents whose chunks failed (the LLM server was down) are atomized
again in place once it is back, and the result is the index a healthy build gives."""
from __future__ import annotations

import pytest
import torch
from atomize.helpers import KB, PASSAGE_A, PASSAGE_B, ScriptedLLM, facts_script, passage_of

from atomicrag import AtomicRAG
from atomicrag.llm.protocol import ChatRequest, ChatResult

from .conftest import base_config

DOCS = [{"id": "a", "text": PASSAGE_A}, {"id": "b", "text": PASSAGE_B}]


def _config() -> dict:
    return base_config(atomizer={"name": "llm", "max_chunk_failures_frac": 0.5})


def test_retry_failed_redoes_only_the_failed_documents_and_matches_a_healthy_build(tmp_path) -> None:
    server = {"down": True}
    healthy = facts_script(KB)

    def script(req: ChatRequest) -> ChatResult:  # PASSAGE_B's requests fail while the server is down
        if server["down"] and passage_of(req) == PASSAGE_B:
            return ChatResult(error="failed after 4 attempt(s): ConnectError: connection refused")
        return healthy(req)

    llm = ScriptedLLM(script)
    rag = AtomicRAG(_config(), llm=llm, progress=False).index(DOCS)
    assert rag.stats()["failed_chunks"] == 1
    [failed] = rag.failures  # the public per-document report: which document, which chunk, why
    assert failed.doc_id == "b" and failed.chunks == failed.failed_chunks == 1
    assert "connection refused" in failed.reasons[0] and failed.failures[0].chunk_id.startswith("b")
    assert [(r.doc_id, r.failed_chunks) for r in rag.report()] == [("a", 0), ("b", 1)]
    with pytest.raises(KeyError, match="nope"):
        rag.report(["nope"])
    before = rag.graph.num_atoms
    rag.save(tmp_path / "idx")
    rag = AtomicRAG.load(tmp_path / "idx", llm=llm, progress=False)  # failures survive save/load
    assert rag.stats()["failed_chunks"] == 1

    with pytest.raises(RuntimeError, match="max_chunk_failures_frac"):  # still down: an error, not a no-op
        rag.retry_failed()
    assert rag.stats()["failed_chunks"] == 1 and rag.graph.num_atoms == before  # left as it was
    server["down"] = False
    llm.requests.clear()
    assert rag.retry_failed() == 0
    assert {passage_of(r) for r in llm.requests} == {PASSAGE_B}  # the healthy document is not redone
    assert rag.stats()["failed_chunks"] == 0 and rag.graph.num_atoms > before and rag.failures == []
    assert [d.id for d in rag.documents] == ["a", "b"]  # documents keep their place

    fresh = AtomicRAG(_config(), llm=ScriptedLLM(healthy), progress=False).index(DOCS)
    assert [a.text for a in rag.graph.atoms] == [a.text for a in fresh.graph.atoms]
    assert rag.graph.entity_keys == fresh.graph.entity_keys
    assert torch.equal(rag.graph.adjacency.to_dense(), fresh.graph.adjacency.to_dense())

    llm.requests.clear()
    assert rag.retry_failed() == 0 and llm.requests == []  # nothing left to retry
