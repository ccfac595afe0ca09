"""One LLM server per process: every AtomicRAG object (and every load()) of the same LLM config
uses the one launched server; it stops when the last of them is closed, not before."""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from atomicrag.library.api import AtomicRAG
from atomicrag.llm import backends, process_shared
from atomicrag.llm.openai_client import OpenAIClient

from .conftest import DOCS, base_config


class FakeServer:
    """Stands in for a launched vLLM server process: records starts and stops."""

    launched: ClassVar[list[FakeServer]] = []

    def __init__(self) -> None:
        self.running = True
        self.base_url = f"http://127.0.0.1:{9000 + len(self.launched)}/v1"
        FakeServer.launched.append(self)

    def stop(self) -> None:
        self.running = False


@pytest.fixture()
def fake_launcher(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[FakeServer]:
    FakeServer.launched = []
    monkeypatch.setenv("ATOMICRAG_STATE_DIR", str(tmp_path / "state"))  # no resident server found
    monkeypatch.setattr(backends, "launch_vllm_for", lambda cfg, paths: FakeServer())
    monkeypatch.setattr(OpenAIClient, "probe", lambda self: None)  # nothing listens at the fake URL
    return FakeServer


def vllm_config(tmp_path: Path) -> dict[str, Any]:
    cfg = base_config(llm={"name": "vllm", "model": "tiny", "cache": False})
    cfg["paths"] = {"cache_dir": str(tmp_path / "cache")}
    return cfg


def test_two_objects_share_one_server_and_the_last_close_stops_it(fake_launcher: type[FakeServer],
                                                                  tmp_path: Path) -> None:
    a, b = AtomicRAG(vllm_config(tmp_path)), AtomicRAG(vllm_config(tmp_path))
    assert a.llm is not None and b.llm is not None
    assert len(fake_launcher.launched) == 1  # the second object found the first one's server
    server = fake_launcher.launched[0]
    a.close()
    a.close()  # closing twice must not give back the other object's hold
    assert server.running, "closing one user stopped the server another still uses"
    b.close()
    assert not server.running
    with AtomicRAG(vllm_config(tmp_path)) as c:  # after the last close, a new user starts a new one
        assert c.llm is not None
        assert len(fake_launcher.launched) == 2 and fake_launcher.launched[1].running
    assert not fake_launcher.launched[1].running


def test_loaded_indexes_share_the_server(fake_launcher: type[FakeServer], tmp_path: Path) -> None:
    with AtomicRAG(vllm_config(tmp_path)) as rag:
        rag.index(DOCS[:4])
        rag.save(tmp_path / "idx")
    loaded = [AtomicRAG.load(tmp_path / "idx") for _ in range(3)]
    for rag in loaded:
        assert rag.llm is not None
    assert len(fake_launcher.launched) == 1 and fake_launcher.launched[0].running
    for rag in loaded:
        rag.close()
    assert not any(s.running for s in fake_launcher.launched)


def test_other_llm_configs_get_their_own_server(fake_launcher: type[FakeServer], tmp_path: Path) -> None:
    a = AtomicRAG(vllm_config(tmp_path))
    other = vllm_config(tmp_path)
    other["llm"]["temperature"] = 0.7
    b = AtomicRAG(other)
    assert a.llm is not None and b.llm is not None
    assert len(fake_launcher.launched) == 2
    a.close()
    b.close()
    assert not any(s.running for s in fake_launcher.launched)


def test_a_remote_url_is_not_shared() -> None:
    from atomicrag.core.config import LLMConfig

    assert process_shared.shares(LLMConfig(name="vllm"))
    assert not process_shared.shares(LLMConfig(name="vllm", base_url="http://host:8000/v1"))
    assert not process_shared.shares(LLMConfig(name="fake"))
