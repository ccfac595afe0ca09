"""A saved index is data: a copied index whose manifest.json was edited cannot run a program, touch
a file of the user's or send the user's API key elsewhere (library/index_settings.py)."""
from __future__ import annotations

import dataclasses
import http.server
import json
import logging
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atomicrag import AtomicRAG
from atomicrag.core.config import Config
from atomicrag.library.index_settings import INDEX_SETTINGS, ignored_settings, index_settings

from .conftest import DOCS, base_config


@pytest.fixture(scope="module")
def clean_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clean") / "index"
    AtomicRAG(base_config(), progress=False).index(DOCS[:6]).save(path)
    return path


def _hostile_copy(clean: Path, tmp_path: Path, **sections: dict[str, Any]) -> Path:
    """A copy of the index whose manifest's config sets ``sections`` (as an attacker edits it)."""
    copy = tmp_path / "copied_index"
    shutil.copytree(clean, copy)
    mpath = copy / "manifest.json"
    info = json.loads(mpath.read_text())
    for section, values in sections.items():
        info["config"].setdefault(section, {}).update(values)
    mpath.write_text(json.dumps(info))
    return copy


@pytest.fixture()
def user_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The loading user's own configuration: their vLLM interpreter (a script that records it ran
    and exits), a model that needs no conversion, their cache folder and their API key."""
    user_marker = tmp_path / "user_python_ran"
    script = tmp_path / "user_python"
    script.write_text(f"#!/bin/sh\necho ran > {user_marker}\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("ATOMICRAG_VLLM_PYTHON", str(script))
    monkeypatch.setenv("ATOMICRAG_LLM__MODEL_PATH", "user-org/user-model")  # not a GGUF: nothing to convert
    monkeypatch.setenv("ATOMICRAG_LLM__STARTUP_TIMEOUT_S", "20")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-secret")
    return {"user_marker": user_marker}


def test_manifest_server_python_never_runs(clean_index: Path, tmp_path: Path, user_env: dict[str, Path],
                                           caplog: pytest.LogCaptureFixture) -> None:
    marker = tmp_path / "HOSTILE_RAN"
    hostile = tmp_path / "evil.sh"
    hostile.write_text(f"#!/bin/sh\necho pwned > {marker}\nexit 1\n")
    hostile.chmod(0o755)
    copy = _hostile_copy(clean_index, tmp_path, llm={"name": "vllm", "server_python": str(hostile),
                                                     "model_path": "evil-org/model"})
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        rag = AtomicRAG.load(copy, progress=False)
    assert rag.config.llm.server_python is None
    assert "llm.server_python" in caplog.text and "ignored" in caplog.text  # the warning names the key
    with pytest.raises(Exception):  # noqa: B017 - the user's own (stand-in) interpreter exits at once
        rag.llm.chat([])
    assert not marker.exists(), "the manifest's llm.server_python was run"
    assert user_env["user_marker"].exists()  # the launch happened, with the user's interpreter


def test_manifest_llm_cache_never_touches_users_file(clean_index: Path, tmp_path: Path, user_env: dict[str, Path],
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    from atomicrag.llm.protocol import ChatRequest

    notes = tmp_path / "notes.txt"
    notes.write_text("my private notes\n")
    copy = _hostile_copy(clean_index, tmp_path, paths={"llm_cache": str(notes)}, llm={"cache": True})
    monkeypatch.setenv("ATOMICRAG_LLM", "fake")  # the user's choice of LLM, cached in their own folder
    monkeypatch.setenv("ATOMICRAG_LLM__CACHE", "true")
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        rag = AtomicRAG.load(copy, progress=False)
    assert "paths.llm_cache" in caplog.text
    rag.llm.chat([ChatRequest(messages=[{"role": "user", "content": "hello"}])])  # a cached call
    rag.close()
    assert notes.read_text() == "my private notes\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("notes")) == ["notes.txt"]
    assert (tmp_path / "xdg" / "atomicrag" / "llm_cache.sqlite").is_file()  # the user's cache was used


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def _record(self) -> None:
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization", "")})
        self.send_response(500)
        self.end_headers()

    do_GET = do_POST = _record

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def recorder() -> Iterator[str]:
    _Recorder.seen = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        srv.server_close()


def test_manifest_base_url_never_gets_a_request(clean_index: Path, tmp_path: Path, user_env: dict[str, Path],
                                                recorder: str, caplog: pytest.LogCaptureFixture) -> None:
    copy = _hostile_copy(clean_index, tmp_path, llm={"name": "openai", "base_url": recorder, "max_retries": 0,
                                                     "model": "gpt-x"})
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        rag = AtomicRAG.load(copy, progress=False)
    assert rag.config.llm.base_url is None and rag.config.llm.name != "openai"
    assert "llm.base_url" in caplog.text and "llm.name" in caplog.text
    with pytest.raises(Exception):  # noqa: B017 - the user's stand-in interpreter exits at once
        rag.llm.chat([])
    assert _Recorder.seen == [], f"the manifest's llm.base_url got requests: {_Recorder.seen}"


def test_trust_remote_code_and_devices_are_the_users(clean_index: Path, tmp_path: Path) -> None:
    copy = _hostile_copy(clean_index, tmp_path, embedder={"trust_remote_code": True, "device": "cuda"},
                         graph={"device": "cuda"}, retriever={"reranker": "/tmp/evil-model", "top_k": 3},
                         fidelity={"released_code": "/home/someone"})
    rag = AtomicRAG.load(copy, progress=False, config={"embedder": {"device": "cpu"}, "graph": {"device": "cpu"}})
    assert rag.config.embedder.trust_remote_code is False
    assert rag.config.retriever.reranker is None and rag.config.fidelity.released_code is None
    assert rag.config.retriever.top_k == 3  # a query setting is the index's
    assert (rag.config.embedder.device, rag.config.graph.device) == ("cpu", "cpu")  # no "cannot change" error


def test_saved_manifest_carries_only_index_settings(clean_index: Path, caplog: pytest.LogCaptureFixture) -> None:
    saved = json.loads((clean_index / "manifest.json").read_text())["config"]
    assert "llm" not in saved and "paths" not in saved
    assert set(saved) <= set(INDEX_SETTINGS) | {"seed"}
    for section, values in saved.items():
        if isinstance(values, dict):
            assert set(values) <= INDEX_SETTINGS[section], section
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        AtomicRAG.load(clean_index, progress=False)
    assert "ignored" not in caplog.text  # a clean index loads without a warning


def test_old_manifest_with_default_machine_settings_loads_quietly(clean_index: Path, tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Indexes saved before the rule hold the saver's whole config: keys equal to what the user's
    configuration gives are no news; only differing ones are named."""
    full = dataclasses.asdict(Config())
    copy = _hostile_copy(clean_index, tmp_path, **{"paths": full["paths"]})
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        AtomicRAG.load(copy, progress=False)
    assert "paths.data_dir" not in caplog.text


def test_allowed_free_text_fields_are_reviewed() -> None:
    """Every free-text field a manifest may set was reviewed: none names a program, an endpoint, a key
    variable or a file the loader would write. A new string field in an allowed section fails here
    until it is added to this list (or excluded in INDEX_SETTINGS)."""
    reviewed = {
        "dataset.chunk_tokenizer",  # an HF tokenizer name or folder: data, loaded without remote code
        "atomizer.spacy_model",  # an installed spaCy package or a pipeline folder
        "embedder.model", "embedder.query_prefix", "embedder.passage_prefix",  # identity of the vectors
    }
    cfg = Config()
    found = set()
    for section, fields in INDEX_SETTINGS.items():
        for f in dataclasses.fields(getattr(cfg, section)):
            if f.name in fields and not _is_mode(getattr(cfg, section), f.name) and \
                    ("str" in str(f.type) or "list" in str(f.type)):
                found.add(f"{section}.{f.name}")
    names = {s for s in found if s.endswith(".name")}
    assert found - names == reviewed


def _is_mode(section: Any, name: str) -> bool:
    from atomicrag.core.checks import modes

    return name in modes(type(section))


def test_index_settings_helpers() -> None:
    cfg = Config()
    full = dataclasses.asdict(cfg)
    kept = index_settings(full)
    assert "llm" not in kept and "paths" not in kept and "device" not in kept["graph"]
    assert ignored_settings(full, cfg) == []
    full["llm"]["base_url"] = "http://elsewhere"
    full["experiment_name"] = "old harness field"
    assert ignored_settings(full, cfg) == ["llm.base_url"]


def test_cli_query_on_a_hostile_index_sends_nothing_to_its_server(clean_index: Path, tmp_path: Path,
                                                                  user_env: dict[str, Path], recorder: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The probe's own path: ``atomicrag query`` on a copied index whose manifest names a server."""
    from atomicrag.library.cli import main

    copy = _hostile_copy(clean_index, tmp_path, llm={"name": "openai", "base_url": recorder, "max_retries": 0},
                         reader={"name": "precise"})
    code = main(["-q", "query", "Where was Marie Curie born?", "--index", str(copy)])
    err = capsys.readouterr().err
    assert "llm.base_url" in err and "ignored" in err  # the user is told what the file asked for
    assert code != 0  # the user's own (stand-in) vLLM interpreter exits at once: the answer fails
    assert _Recorder.seen == [], f"the manifest's llm.base_url got requests: {_Recorder.seen}"
