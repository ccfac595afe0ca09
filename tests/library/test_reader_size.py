"""The reader's context sized to the reader: a small reader reads fewer, higher-ranked documents."""
from __future__ import annotations

import pytest

from atomicrag import AtomicRAG
from atomicrag.core.config import LLMConfig, ReaderConfig

from .conftest import DOCS, base_config


@pytest.mark.parametrize(("model", "path", "billions"), [
    ("qwen2.5-coder-0.5b-instruct", None, 0.5),
    ("smollm2-135m-instruct", "smollm2", 0.135),
    ("served-name", "qwen0.5b", 0.5),  # the offline package's alias
    ("Qwen/Qwen2.5-14B-Instruct", None, 14.0),
    ("meta-llama/Llama-3.1-8B-Instruct", None, 8.0),
    ("gpt-4o-mini", None, None),  # a hosted model's name says nothing: unknown, not small
    ("BAAI/bge-m3", None, None),
    ("gpt2-medium", None, None),
])
def test_model_size_is_read_from_its_name(model: str, path: str | None, billions: float | None) -> None:
    assert LLMConfig(name="fake", model=model, model_path=path).params_billions() == billions


def test_an_explicit_size_wins_over_the_name() -> None:
    assert LLMConfig(name="fake", model="qwen2.5-0.5b", params_b=32.0).params_billions() == 32.0
    with pytest.raises(ValueError, match="params_b"):
        LLMConfig(name="fake", params_b=-1.0)


def test_document_limit_rule() -> None:
    rc = ReaderConfig()
    assert rc.document_limit(0.5) == rc.small_reader_documents > 0  # small reader: fewer documents
    assert rc.document_limit(14.0) == 0  # a large reader fills the budget
    assert rc.document_limit(None) == 0  # unknown size: the budget
    assert ReaderConfig(max_documents=4).document_limit(0.5) == 4  # an explicit count wins
    assert ReaderConfig(small_reader_documents=0).document_limit(0.5) == 0  # the rule off


def _context_documents(model: str) -> list[str]:
    cfg = base_config(reader={"name": "precise", "context": "documents", "context_tokens": 2000},
                      llm={"model": model}, retriever={"top_k": 25})
    with AtomicRAG(cfg, progress=False) as rag:
        rag.index(DOCS)
        result = rag.query("Where was Marie Curie born and what did Pierre Curie win?")
    return list(dict.fromkeys(c["passage_id"] for c in result.context))


def test_a_small_reader_reads_only_the_first_ranked_documents() -> None:
    large = _context_documents("a-14b-reader")
    small = _context_documents("a-0.5b-reader")
    assert len(large) > 2  # the budget holds many of the ranked documents
    assert small == large[:ReaderConfig().small_reader_documents]  # the same ranking, cut
