"""The reader's context sized to the reader: how many ranked documents a reader reads is a setting
of each LLM option (``llm.reader_documents``), never guessed from the model's name, and every
answer row and run records it (issue #48: a regex on the name decided, logged nothing and was
recorded nowhere, so the same model served under another name read the whole budget)."""
from __future__ import annotations

from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.core.compose import load_config
from atomicrag.core.config import LLMConfig, ReaderConfig

from .conftest import DOCS, base_config

CONF_LLM = Path(__file__).resolve().parents[2] / "conf" / "llm"


def test_every_answering_llm_option_states_how_many_documents_its_reader_reads() -> None:
    for path in sorted(CONF_LLM.glob("*.yaml")):
        if path.stem == "fake":  # test plumbing: no reader to size
            continue
        assert load_config({"llm": {"option": path.stem}}).llm.reader_documents is not None, path.name
    assert load_config({"llm": {"option": "vllm_cpu"}}).llm.reader_documents == 2  # SmolLM2-135M
    assert load_config({"llm": {"option": "vllm_cpu_qwen05b"}}).llm.reader_documents == 2
    assert load_config({"llm": {"option": "vllm_qwen14b"}}).llm.reader_documents == 0
    with pytest.raises(ValueError, match="reader_documents"):
        LLMConfig(name="fake", reader_documents=-1)


def test_document_limit_rule() -> None:
    rc = ReaderConfig()
    assert rc.document_limit(2) == 2 and rc.document_limit(0) == 0  # the LLM option's setting
    assert rc.document_limit(None) == 0  # not said, size unknown: the budget
    assert rc.document_limit(None, 0.5) == rc.small_reader_documents > 0  # a stated small size
    assert rc.document_limit(None, 14.0) == 0
    assert ReaderConfig(max_documents=4).document_limit(2) == 4  # an explicit count wins
    assert ReaderConfig(small_reader_documents=0).document_limit(None, 0.5) == 0  # the size rule off


def _context_documents(llm: dict) -> tuple[list[str], int | None]:
    cfg = base_config(reader={"name": "precise", "context": "documents", "context_tokens": 2000},
                      llm=llm, retriever={"top_k": 25})
    with AtomicRAG(cfg, progress=False) as rag:
        rag.index(DOCS)
        batch = rag._engine.retrieve(rag._index(), [_question()])
    return list(dict.fromkeys(c.passage_id for c in batch.contexts[0])), batch.traces[0].reader_documents


def _question():  # noqa: ANN202
    from atomicrag.core.schemas import Question

    return Question(id="q0", question="Where was Marie Curie born and what did Pierre Curie win?")


def test_the_same_model_under_another_name_reads_the_same_documents() -> None:
    budget, recorded_budget = _context_documents({"model": "a-14b-reader"})
    assert len(budget) > 2 and recorded_budget == 0  # the budget holds many of the ranked documents
    # the setting, whatever the served name says (the old rule read "0.5b" in the name)
    small, recorded = _context_documents({"model": "served-name", "reader_documents": 2})
    assert small == budget[:2] and recorded == 2
    renamed, _ = _context_documents({"model": "a-0.5b-reader"})
    assert renamed == budget  # a name alone decides nothing


def test_the_library_answers_with_the_reader_chosen_on_real_documents() -> None:
    """The library's default LLM is the one that answered more real-document questions
    (experiments/real_docs_qa); the harness keeps the model its records ran on."""
    import json

    from atomicrag.core.compose import HARNESS_ROOT, compose

    records = Path(__file__).resolve().parents[2] / "results" / "qa_real_docs"
    answered = {}
    for name in ("vllm_cpu_smollm2", "vllm_cpu_qwen05b"):
        rec = json.loads((records / f"{name}.json").read_text())
        answered[rec["llm"]] = rec["summary"]["answered_with_right_citation"]
    best = max(answered, key=answered.get)
    assert load_config(None).llm.model == best == "qwen2.5-coder-0.5b-instruct"
    assert compose([], root=HARNESS_ROOT).llm.model == "smollm2-135m-instruct"
