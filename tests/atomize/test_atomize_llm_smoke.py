"""The llm atomizer on 3 smoke chunks with the real llama.cpp server + offline SmolLM2 (slow).

Skips, saying why, when the LLM factory, llama-cpp-python or the model package is missing.
A 135M model is weak: the test asserts that every chunk is accounted for (atoms or a reported
failure) and that the atoms are schema-valid, not that they are good.
"""
from __future__ import annotations

import importlib.util
import json

import jsonschema
import pytest

from atomicrag.core.config import AtomizerConfig, LLMConfig, PathsConfig
from atomicrag.core.schemas import Chunk

pytestmark = pytest.mark.slow

SMOKE = PathsConfig().data_roots()[-1] / "2wikimultihopqa" / "smoke" / "corpus.jsonl"  # shipped in the package
ATOM_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "minLength": 1}, "chunk_id": {"type": "string"},
                   "passage_id": {"type": "string"}, "entities": {"type": "array", "items": {"type": "string"}}},
    "required": ["text", "chunk_id", "passage_id", "entities"],
}


def _skip_reason() -> str | None:
    if importlib.util.find_spec("atomicrag.llm.factory") is None:
        return "atomicrag.llm.factory (build_llm) is not there yet"
    from atomicrag.llm.servers import llamacpp_server_missing

    if llamacpp_server_missing():
        return f"llama-cpp-python[server] is not installed (missing {llamacpp_server_missing()})"
    try:
        from atomicrag.core.offline_models import smollm2_gguf

        smollm2_gguf()
    except Exception as exc:  # noqa: BLE001  any resolution problem is a skip reason
        return f"offline SmolLM2 model not available: {exc}"
    if not SMOKE.is_file():
        return f"{SMOKE} not found"
    return None


def test_llm_atomizer_with_llamacpp_smollm2(tmp_path):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    from atomicrag.atomize.llm import LLMAtomizer
    from atomicrag.llm.factory import build_llm

    rows = [json.loads(x) for x in SMOKE.read_text().splitlines()[:3]]
    chunks = [Chunk(id=r["id"], passage_id=r["id"], text=r["text"], title=r.get("title", ""),
                    end_char=len(r["text"])) for r in rows]
    cfg = LLMConfig(name="llamacpp", model_path="smollm2", n_threads=2, n_ctx=4096, max_retries=1,
                    timeout_s=300.0)
    llm = build_llm(cfg, PathsConfig(cache_dir=str(tmp_path), llm_cache=str(tmp_path / "llm.sqlite")))
    try:
        # the 135M model fails some chunks: this test checks they are reported, not the failure budget
        at = LLMAtomizer(AtomizerConfig(name="llm", max_chunk_failures_frac=1.0), llm,
                         checkpoint_path=tmp_path / "ckpt.jsonl", retries=0, extraction_max_tokens=768, progress=False)
        res = at.atomize(chunks)
    finally:
        llm.close()
    print(json.dumps({"stats": res.stats, "atoms": [a.to_dict() for a in res.atoms],
                      "failures": [f.to_dict() for f in res.failures]}, indent=1, ensure_ascii=False)[:6000])
    done = {a.chunk_id for a in res.atoms} | {f.chunk_id for f in res.failures}
    assert done == {c.id for c in chunks}
    for a in res.atoms:
        jsonschema.validate(a.to_dict(), ATOM_SCHEMA)
    assert res.llm_calls >= 2 * (len(chunks) - len(res.failures))
