"""The llm atomize stage inside index_corpus: its checkpoint lives in the stage cache folder."""
from __future__ import annotations

import pytest

from atomicrag.atomize.llm import LLMAtomizer
from atomicrag.core.config import AtomizerConfig, Config
from atomicrag.core.schemas import Chunk
from atomicrag.embed.fake import FakeEmbedder
from atomicrag.graph.cached_build import index_corpus

from .helpers import KB, PASSAGE_A, PASSAGE_B, ScriptedLLM, facts_script


def test_llm_atomize_stage_resumes_from_its_checkpoint(tmp_path):
    cfg = Config(atomizer=AtomizerConfig(name="llm"))
    chunks = [Chunk(id="c0", passage_id="p0", text=PASSAGE_A), Chunk(id="c1", passage_id="p1", text=PASSAGE_B)]
    llm = ScriptedLLM(facts_script(KB))
    llm.fail_on_chat_call = 3
    with pytest.raises(KeyboardInterrupt):
        index_corpus(chunks, cfg, llm, FakeEmbedder(8), tmp_path, "toy",
                     atomizer=LLMAtomizer(cfg.atomizer, llm, batch_size=1, progress=False))
    llm2 = ScriptedLLM(facts_script(KB))
    g = index_corpus(chunks, cfg, llm2, FakeEmbedder(8), tmp_path, "toy",
                     atomizer=LLMAtomizer(cfg.atomizer, llm2, batch_size=1, progress=False))
    assert len(llm2.requests) == 2 and g.num_atoms == 4
    assert g.meta["atomize_stats"]["resumed_chunks"] == 1
    assert {"lothair ii", "lotharingia", "teutberga"} <= set(g.entity_keys)
