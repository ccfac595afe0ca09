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
    # merge_window_repeats (on by default) changes the atoms of overlapping windows, so it is keyed
    # while on; off, a sentence atomization keeps the key it had before the switch existed
    (AtomizerConfig(name="sentence", merge_window_repeats=False), "2cb17f373921ec73"),
    (AtomizerConfig(name="sentence", merge_window_repeats=False, resolve_subject=True, entity_filter=True,
                    noun_chunks=True), "be438b68f7737ab0"),
    (AtomizerConfig(name="sentence"), "c9d936a3536d712a"),
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


def test_every_declared_key_field_is_a_config_field() -> None:
    from dataclasses import fields

    from atomicrag.core.registry import ATOMIZERS

    known = {f.name for f in fields(AtomizerConfig)}
    for name in ATOMIZERS.names():
        assert set(ATOMIZERS.cache_key_fields(name)) <= known, name


def test_a_registered_atomizer_is_keyed_by_the_fields_it_declares(monkeypatch: pytest.MonkeyPatch) -> None:
    from atomicrag.core import registry

    for attr in ("_paths", "_needs", "_loaded", "_keys"):  # the entry is gone after the test
        monkeypatch.setattr(registry.ATOMIZERS, attr, dict(getattr(registry.ATOMIZERS, attr)))
    registry.ATOMIZERS.register("mine", object, cache_key=("min_atom_chars",), cache_key_when_set=("noun_chunks",))
    ck = chunks_hash(CHUNKS)

    def key(**fields: object) -> str:
        return content_hash("atomize", atomize_inputs(ck, AtomizerConfig(name="mine", **fields), object()))

    assert atomize_inputs(ck, AtomizerConfig(name="mine"), object()) == {
        "chunks": ck, "atomizer": "mine", "cfg": {"min_atom_chars": 15}}  # no spacy_model: no spaCy versions
    assert key(min_atom_chars=3) != key()  # declared: keyed
    assert key(nlp_batch_size=7) == key() and key(spacy_model="other") == key()  # not declared: not keyed
    assert key(noun_chunks=True) != key() and key(noun_chunks=False) == key()  # keyed only when set
