"""The real thing: llama.cpp server + offline SmolLM2 GGUF + the OpenAI client + the cache."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from atomicrag.core.config import LLMConfig, PathsConfig
from atomicrag.core.offline_models import OfflineModelError, resolve_model_path
from atomicrag.llm.factory import build_llm
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatRequest
from atomicrag.llm.servers import LocalServer, launch_llamacpp, llamacpp_server_missing

pytestmark = pytest.mark.slow

SCHEMA = {
    "type": "object",
    "properties": {"named_entities": {"type": "array", "items": {"type": "string"}, "maxItems": 5}},
    "required": ["named_entities"],
}
PASSAGE = "Barack Obama was born in Honolulu, Hawaii. He was president of the United States."


def _request(text: str = PASSAGE) -> ChatRequest:
    return ChatRequest(
        messages=[
            {"role": "system", "content": "You extract named entities. Reply in JSON."},
            {"role": "user", "content": f"Named entities in: {text}"},
        ],
        schema=SCHEMA,
        max_tokens=64,
        module="atomize",
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    if llamacpp_server_missing():
        pytest.skip("llama-cpp-python[server] not installed")
    try:
        model = resolve_model_path("smollm2")
    except OfflineModelError as exc:
        pytest.skip(str(exc))
    srv = launch_llamacpp(model, log_dir=tmp_path_factory.mktemp("logs"), n_threads=2, n_ctx=2048,
                          model_alias="smollm2", startup_timeout_s=180)
    yield srv
    srv.stop()


def test_schema_object_from_real_server(server: LocalServer) -> None:
    # The same client class the vLLM path uses, in the json_object+schema dialect that
    # llama-cpp-python's server turns into a grammar (the factory's probe picks it itself).
    client = OpenAIClient(server.base_url, "smollm2", timeout_s=120, max_retries=1,
                          response_format_style="json_object")
    [r] = client.chat([_request()])
    assert r.ok, (r.error, r.text)
    jsonschema.validate(r.parsed, SCHEMA)
    assert r.prompt_tokens > 10 and r.completion_tokens > 0 and r.attempts == 1
    assert client.response_format_style == "json_object"


def test_factory_attach_and_cache_hit(server: LocalServer, tmp_path: Path) -> None:
    cfg = LLMConfig(name="llamacpp", model="smollm2", base_url=server.base_url, concurrency=2,
                    max_retries=1, timeout_s=120)
    paths = PathsConfig(cache_dir=str(tmp_path), llm_cache=str(tmp_path / "llm.sqlite"))
    llm = build_llm(cfg, paths)
    try:
        [first] = llm.chat([_request("Marie Curie worked in Paris.")])
        assert first.ok and not first.cached and first.completion_tokens > 0, first.error
        jsonschema.validate(first.parsed, SCHEMA)
        [second] = llm.chat([_request("Marie Curie worked in Paris.")])
        assert second.cached and second.parsed == first.parsed
        assert (second.prompt_tokens, second.completion_tokens) == (0, 0)
        assert second.cached_completion_tokens == first.completion_tokens
    finally:
        llm.close()
    assert server.is_running()  # attached, not owned: closing the client leaves it up


def test_factory_launches_and_stops_its_own_server(tmp_path: Path) -> None:
    if llamacpp_server_missing():
        pytest.skip("llama-cpp-python[server] not installed")
    cfg = LLMConfig(name="llamacpp", model="smollm2", n_threads=2, n_ctx=2048, cache=False,
                    max_retries=1, startup_timeout_s=180)
    llm = build_llm(cfg, PathsConfig(cache_dir=str(tmp_path)))
    assert isinstance(llm, OpenAIClient) and llm.server.is_running()
    server = llm.server
    try:
        [r] = llm.chat([ChatRequest(messages=[{"role": "user", "content": "Say hello."}], max_tokens=8)])
        assert r.ok and r.text.strip() and r.completion_tokens > 0
        assert list((tmp_path / "servers").glob("llamacpp-*.log"))  # the server log is kept
    finally:
        llm.close()
    assert not server.is_running()  # the launched server is gone
