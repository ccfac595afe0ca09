"""Stage cache keys stay what they were: a cached atomization or graph is found again by the same
config. The expected keys were computed on the code before the keys were built from the registry
declarations (issue #22); a change here orphans every existing cache folder."""
from __future__ import annotations

import pytest

from atomicrag.core.artifacts import content_hash
from atomicrag.core.config import AtomizerConfig, Config
from atomicrag.core.schemas import Chunk
from atomicrag.graph.cached_build import atomize_inputs, chunks_hash, graph_inputs

CHUNKS = [Chunk(id="p1#0", passage_id="p1", title="T", text="Ada Lovelace wrote a program.")]


class _LLMAtomizer:  # the llm atomizer's fingerprint, fixed so the key does not follow prompt versions
    def fingerprint(self) -> dict:
        return {"model": "m", "prompts": ["ner-1", "ext-1"], "max_tokens": [512, 2048], "retries": 1,
                "temperature": 0.0, "seed": 0}


@pytest.fixture(autouse=True)
def _fixed_spacy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("atomicrag.atomize.nlp.spacy_version", lambda: "3.7.0")
    monkeypatch.setattr("atomicrag.atomize.nlp.model_version", lambda model: "1.0.0")


@pytest.mark.parametrize(("cfg", "key"), [
    (AtomizerConfig(name="sentence"), "2cb17f373921ec73"),
    (AtomizerConfig(name="sentence", resolve_subject=True, entity_filter=True, noun_chunks=True), "be438b68f7737ab0"),
    (AtomizerConfig(name="chunk", resolve_subject=True), "3683c498ebe942ae"),  # not a chunk field: not keyed
    (AtomizerConfig(name="vocabulary", vocab_llm_filter=False, vocab_min_freq=3), "2303de3718bd87ad"),
    (AtomizerConfig(name="llm", resolve_subject=True, min_atom_chars=3), "46688e8de2f67c0a"),  # fingerprint only
])
def test_atomize_keys_are_pinned(cfg: AtomizerConfig, key: str) -> None:
    ck = chunks_hash(CHUNKS)
    assert ck == "4444bfb80280fb98"
    atomizer = _LLMAtomizer() if cfg.name == "llm" else object()
    assert content_hash("atomize", atomize_inputs(ck, cfg, atomizer)) == key


def test_graph_key_is_pinned() -> None:
    assert content_hash("graph", graph_inputs("abc", Config(), None)) == "5fddd2f29050ea89"
