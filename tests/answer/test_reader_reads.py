"""The declared reads of each reader variant (``core.config_query.READER_READS``) are what the code
reads: each variant answers with a config that records every field read, and a setting its
variant never reads is named (a sweep over it would change nothing)."""
from __future__ import annotations

import dataclasses

import pytest

from atomicrag import AtomicRAG
from atomicrag.core.config import ReaderConfig
from atomicrag.core.config_query import READER_READS, READER_VARIANTS, reader_variant, unread_reader_settings
from tests.reads_recording import recording

FIELDS = {f.name for f in dataclasses.fields(ReaderConfig)}
# a long document (read as snippets around its ranked atoms) and a short one (read whole)
DOCS = [
    {"doc_id": "curie", "title": "Marie Curie",
     "text": " ".join(f"Marie Curie was born in Warsaw in {1860 + i}. She moved to Paris." for i in range(30))},
    {"doc_id": "warsaw", "title": "Warsaw", "text": "Warsaw is the capital of Poland."},
]


def _reads(variant: str) -> set[str]:
    name, context = variant.split("/")
    # a reader of known size (0.5 B), so the small-reader rule is consulted
    rag = AtomicRAG({"llm": {"option": "fake", "params_b": 0.5}, "embedder": "fake",
                     "reader": {"name": name, "context": context}}, progress=False)
    rag.index(DOCS)
    rag.config.reader, seen = recording(rag.config.reader)  # the engine shares the library's config object
    rag._engine._retrievers.clear()
    rag.query(["Where was Marie Curie born?"])
    rag.close()
    return seen


def test_every_field_declares_its_readers() -> None:
    assert set(READER_READS) == FIELDS
    assert all(set(vs) <= set(READER_VARIANTS) for vs in READER_READS.values())


@pytest.mark.parametrize("variant", READER_VARIANTS)
def test_a_reader_variant_reads_exactly_what_it_declares(variant: str) -> None:
    declared = {f for f, vs in READER_READS.items() if variant in vs}
    recorded = _reads(variant)
    assert recorded - declared == set(), "read but not declared"
    assert declared - recorded == set(), "declared but never read"


def test_a_setting_the_variant_never_reads_is_named() -> None:
    abstract = ReaderConfig(name="abstract", answer_followup="ask", context_tokens=500)
    assert reader_variant(abstract) == "abstract/documents"
    assert [s.split(" ")[0] for s in unread_reader_settings(abstract, "abstract/documents")] == ["answer_followup"]
    atoms = ReaderConfig(name="dataset", context="auto", context_tokens=500)
    assert reader_variant(atoms, dataset_reader="abstract", fidelity_preset="reference_code") == "abstract/atoms"
    assert unread_reader_settings(atoms, "abstract/atoms")[0].startswith("context_tokens (read by precise/documents")
    assert unread_reader_settings(ReaderConfig(), "precise/documents") == []
