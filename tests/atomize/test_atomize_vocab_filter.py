"""The vocabulary LLM filter on its own (no spaCy needed): batching, call count, failures."""
from __future__ import annotations

import math

from atomicrag.atomize.vocabulary import VocabularyAtomizer
from atomicrag.core.config import AtomizerConfig
from atomicrag.llm.protocol import ChatRequest, ChatResult

from .helpers import ScriptedLLM, ok


def test_filter_batches_and_counts_calls():
    terms = [f"Term{i}" if i % 2 else f"junk{i}" for i in range(23)]

    def script(req: ChatRequest) -> ChatResult:
        import json

        batch = json.loads(req.messages[-1]["content"].split("\n", 1)[1])
        assert len(batch) <= 5
        return ok({"entities": [t.upper() for t in batch if t.startswith("Term")] + ["Invented"]})

    llm = ScriptedLLM(script)
    at = VocabularyAtomizer(AtomizerConfig(name="vocabulary", vocab_terms_per_call=5), llm, progress=False,
                            nlp=object())
    kept, calls, failed = at.filter_terms(terms)
    assert calls == math.ceil(23 / 5) == len(llm.requests) and failed == 0
    assert kept == [t for t in terms if t.startswith("Term")]  # case-insensitive, nothing invented


def test_failed_batch_is_kept_unfiltered_and_reported():
    def script(req: ChatRequest) -> ChatResult:
        return ChatResult(text="", error="timeout")

    llm = ScriptedLLM(script)
    at = VocabularyAtomizer(AtomizerConfig(name="vocabulary", vocab_terms_per_call=10), llm, progress=False,
                            nlp=object(), retries=1)
    kept, calls, failed = at.filter_terms(["a", "b"])
    assert kept == ["a", "b"] and calls == 2 and failed == 1
