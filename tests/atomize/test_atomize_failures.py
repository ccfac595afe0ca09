"""LLM atomizer failures are never cached as done: the next run retries exactly the failed chunks."""
from __future__ import annotations

import pytest

from atomicrag.atomize.llm import LLMAtomizer
from atomicrag.core.config import AtomizerConfig, Config
from atomicrag.core.schemas import Chunk
from atomicrag.embed.fake import FakeEmbedder
from atomicrag.graph.cached_build import index_corpus
from atomicrag.llm.protocol import ChatRequest, ChatResult

from .helpers import KB, PASSAGE_A, PASSAGE_B, ScriptedLLM, facts_script, passage_of


def _down_for(passage: str, healthy):  # a transport error for one passage's requests
    def script(req: ChatRequest) -> ChatResult:
        if passage_of(req) == passage:
            return ChatResult(error="failed after 4 attempt(s): ConnectError: connection refused")
        return healthy(req)
    return script


def _chunks() -> list[Chunk]:
    return [Chunk(id="c0", passage_id="p0", text=PASSAGE_A), Chunk(id="c1", passage_id="p1", text=PASSAGE_B)]


def test_failed_chunks_are_not_cached_and_the_next_run_retries_only_them(tmp_path) -> None:
    cfg = Config(atomizer=AtomizerConfig(name="llm", max_chunk_failures_frac=0.5))
    llm = ScriptedLLM(_down_for(PASSAGE_B, facts_script(KB)))
    g1 = index_corpus(_chunks(), cfg, llm, FakeEmbedder(8), tmp_path, "toy",
                      atomizer=LLMAtomizer(cfg.atomizer, llm, batch_size=1, progress=False))
    assert g1.meta["atomize_stats"]["failed_chunks"] == 1
    assert not list(tmp_path.glob("toy/atomize/*/manifest.json"))  # the stage is not complete
    assert not list(tmp_path.glob("toy/graph/*/manifest.json"))  # nor the graph built from it

    healthy = ScriptedLLM(facts_script(KB))  # the server is back
    g2 = index_corpus(_chunks(), cfg, healthy, FakeEmbedder(8), tmp_path, "toy",
                      atomizer=LLMAtomizer(cfg.atomizer, healthy, batch_size=1, progress=False))
    assert {passage_of(r) for r in healthy.requests} == {PASSAGE_B}  # only the failed chunk, NER + extraction
    assert g2.meta["atomize_stats"]["failed_chunks"] == 0 and g2.num_atoms > g1.num_atoms
    assert list(tmp_path.glob("toy/atomize/*/manifest.json"))  # now complete

    again = ScriptedLLM(facts_script(KB))
    index_corpus(_chunks(), cfg, again, FakeEmbedder(8), tmp_path, "toy",
                 atomizer=LLMAtomizer(cfg.atomizer, again, batch_size=1, progress=False))
    assert again.requests == []  # complete stages are reused


def test_default_failure_fraction_aborts_with_a_clear_message(tmp_path) -> None:
    cfg = Config(atomizer=AtomizerConfig(name="llm"))
    assert cfg.atomizer.max_chunk_failures_frac < 1.0
    dead = ScriptedLLM(lambda req: ChatResult(error="failed after 4 attempt(s): HTTP 404: model not served"))
    with pytest.raises(RuntimeError) as info:
        index_corpus(_chunks(), cfg, dead, FakeEmbedder(8), tmp_path, "toy",
                     atomizer=LLMAtomizer(cfg.atomizer, dead, batch_size=1, progress=False))
    msg = str(info.value)
    assert "max_chunk_failures_frac" in msg and "HTTP 404" in msg and "re-run" in msg
    assert not list(tmp_path.glob("toy/atomize/*/manifest.json"))


def test_a_cache_that_an_older_version_marked_complete_with_failures_is_redone(tmp_path) -> None:
    """Caches written before this fix hold failed chunks under a finished manifest: retry them."""
    from atomicrag.core.artifacts import StageCache, content_hash
    from atomicrag.graph.cached_build import atomize_inputs, chunks_hash, incomplete
    from atomicrag.graph.io import save_atomize_result

    cfg = Config(atomizer=AtomizerConfig(name="llm", max_chunk_failures_frac=0.5))
    llm = ScriptedLLM(_down_for(PASSAGE_B, facts_script(KB)))
    at = LLMAtomizer(cfg.atomizer, llm, batch_size=1, progress=False)
    partial = at.atomize(_chunks())
    assert incomplete(partial)
    key = content_hash("atomize", atomize_inputs(chunks_hash(_chunks()), cfg.atomizer, at))
    legacy = StageCache(tmp_path, "toy", "atomize", key)
    legacy.begin()
    save_atomize_result(partial, legacy.dir)
    legacy.finish({}, extra={"failed_chunks": 1})  # what the old code did

    healthy = ScriptedLLM(facts_script(KB))
    g = index_corpus(_chunks(), cfg, healthy, FakeEmbedder(8), tmp_path, "toy",
                     atomizer=LLMAtomizer(cfg.atomizer, healthy, batch_size=1, progress=False))
    assert healthy.requests and g.meta["atomize_stats"]["failed_chunks"] == 0


def test_vocabulary_filter_failures_count_as_incomplete() -> None:
    from atomicrag.core.schemas import AtomizeResult
    from atomicrag.graph.cached_build import incomplete

    assert incomplete(AtomizeResult(atoms=[], triples=[], failures=[], llm_calls=3,
                                    stats={"vocab_failed_batches": 1}))
    assert not incomplete(AtomizeResult(atoms=[], triples=[], failures=[], llm_calls=3, stats={}))
