"""Model downloads are the user's choice: which hub models a config loads, the cache check that
stops an uncached one before any work with the download command, and trust_remote_code."""
from __future__ import annotations

import pytest

from atomicrag.core import hub_models
from atomicrag.core.compose import load_config
from atomicrag.core.config import EmbedderConfig
from atomicrag.core.hub_models import HubModelMissing, prepare_hub_access


def _cfg(**groups: str):
    return load_config({**groups}, env_prefix=None)


def test_offline_models_switch_the_hub_off() -> None:
    env: dict[str, str] = {}
    assert prepare_hub_access(_cfg(llm="fake"), env) == []
    assert env["HF_HUB_OFFLINE"] == "1"


def test_hub_models_named_by_the_config() -> None:
    cfg = _cfg(llm="vllm_qwen7b", embedder="bge_large")
    assert hub_models.hub_models(cfg) == [("llm.model", "Qwen/Qwen2.5-7B-Instruct"),
                                          ("embedder.model", "BAAI/bge-large-en-v1.5")]
    # attaching to a running server loads no weights here
    served = load_config({"llm": "vllm_qwen7b"}, env_prefix=None, overrides=["llm.base_url=http://h:8000/v1"])
    assert hub_models.hub_models(served) == []


def test_uncached_hub_model_fails_with_the_download_command(monkeypatch) -> None:
    monkeypatch.setattr(hub_models, "is_cached", lambda repo: repo != "BAAI/bge-large-en-v1.5")
    env: dict[str, str] = {}
    with pytest.raises(HubModelMissing) as err:
        prepare_hub_access(_cfg(llm="fake", embedder="bge_large"), env)
    text = str(err.value)
    assert "embedder.model: BAAI/bge-large-en-v1.5" in text
    assert "huggingface-cli download BAAI/bge-large-en-v1.5" in text
    assert "HF_HUB_OFFLINE=0" in text


def test_cached_hub_model_runs_offline(monkeypatch) -> None:
    monkeypatch.setattr(hub_models, "is_cached", lambda repo: True)
    env: dict[str, str] = {}
    assert prepare_hub_access(_cfg(llm="fake", embedder="bge_large"), env)
    assert env["HF_HUB_OFFLINE"] == "1"


def test_downloads_allowed_when_the_user_says_so(monkeypatch) -> None:
    monkeypatch.setattr(hub_models, "is_cached", lambda repo: False)
    env = {"HF_HUB_OFFLINE": "0"}
    assert prepare_hub_access(_cfg(llm="fake", embedder="bge_large"), env)
    assert env["HF_HUB_OFFLINE"] == "0"  # the libraries (and the vLLM server) may download


def test_is_cached_reads_the_local_cache_only(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not hub_models.is_cached("no-such-org/no-such-model-atomicrag")


def test_trust_remote_code_is_set_per_model() -> None:
    assert _cfg(embedder="nomic_embed").embedder.trust_remote_code is True
    assert _cfg(embedder="gte_qwen2_1.5b").embedder.trust_remote_code is True
    assert _cfg(embedder="bge_large").embedder.trust_remote_code is False
    with pytest.raises(ValueError, match="trust_remote_code"):
        EmbedderConfig(trust_remote_code="yes")  # type: ignore[arg-type]


def test_trust_remote_code_reaches_the_encoder() -> None:
    from atomicrag.embed.builders import _kwargs

    cfg = _cfg(embedder="nomic_embed")
    import dataclasses

    assert _kwargs(dataclasses.asdict(cfg.embedder), "mean")["trust_remote_code"] is True


def test_clamp_takes_the_smaller_of_tokenizer_and_positions() -> None:
    from atomicrag.embed.encoders import clamp_max_length

    class Tok:
        model_max_length = 512

    class NoLimit:
        model_max_length = int(1e30)

    assert clamp_max_length(Tok(), 2048) == 512
    assert clamp_max_length(NoLimit(), 2048, 1024) == 1024
    assert clamp_max_length(NoLimit(), 256, 1024) == 256
