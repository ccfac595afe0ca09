"""Issue #48 item 6: the library writes nothing to the working folder unless asked, and every
cache lives under the user's cache folder, honouring ``XDG_CACHE_HOME``."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.core.config import PathsConfig
from atomicrag.library import setup_cmd
from atomicrag.library.cli import main
from atomicrag.library.user_paths import library_paths
from atomicrag.llm import backends, hf_models

from .conftest import DOCS, base_config


@pytest.fixture()
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("ATOMICRAG_HF_CACHE", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


def test_library_paths_are_under_the_user_cache(xdg: Path) -> None:
    paths = library_paths(PathsConfig())
    assert Path(paths.cache_dir) == xdg / "atomicrag"
    assert Path(paths.llm_cache) == xdg / "atomicrag" / "llm_cache.sqlite"
    mine = library_paths(PathsConfig(cache_dir="my_cache", llm_cache="mine.sqlite"))
    assert (mine.cache_dir, mine.llm_cache) == ("my_cache", "mine.sqlite")  # a path the user set is kept


class _Launched(Exception):
    pass


def test_a_launched_llm_servers_log_is_not_in_the_working_folder(xdg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[PathsConfig] = []

    def launch(cfg: object, paths: PathsConfig) -> None:
        seen.append(paths)
        raise _Launched

    monkeypatch.setattr(backends, "launch_vllm_for", launch)
    monkeypatch.setattr("atomicrag.llm.resident.find_resident", lambda model: None)
    rag = AtomicRAG(base_config(llm={"option": "vllm_cpu", "cache": False}), llm=None, progress=False)
    with pytest.raises(_Launched):
        rag.llm  # noqa: B018  (the property builds the backend)
    log_dir = backends._log_dir(seen[0])
    assert log_dir.is_absolute() and log_dir.is_relative_to(xdg / "atomicrag"), log_dir
    assert not any(Path.cwd().iterdir())  # nothing in the working folder


def test_the_converted_model_cache_honours_xdg(xdg: Path) -> None:
    assert hf_models.hf_cache_root() == xdg / "atomicrag" / "hf"


def test_setup_assembles_models_under_the_user_cache(xdg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(setup_cmd, "existing_server_python", lambda configured=None: "/usr/bin/python3")
    monkeypatch.setattr(setup_cmd, "smollm2_missing", lambda: None)
    monkeypatch.setattr(hf_models, "hf_model", lambda spec, python, cache_dir: seen.append(str(cache_dir)) or "/m")
    setup_cmd.setup(models=["qwen0.5b"], run=lambda cmd: None)
    assert Path(seen[0]) == xdg / "atomicrag"
    assert not any(Path.cwd().iterdir())


def test_a_query_leaves_the_working_folder_empty(xdg: Path) -> None:
    rag = AtomicRAG(base_config(llm={"option": "fake", "cache": True}, reader={"name": "precise"}), progress=False)
    rag.index(DOCS[:5])
    assert rag.query("Where was Marie Curie born?").answer is not None
    assert not any(Path.cwd().iterdir())
    assert (xdg / "atomicrag" / "llm_cache.sqlite").is_file()  # the LLM cache went to the user cache


def test_the_index_time_answering_error_is_printed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from atomicrag.library import readiness

    monkeypatch.setattr(readiness, "answering_problems", lambda cfg: ["no vLLM server environment"])
    (tmp_path / "d.txt").write_text(DOCS[0]["text"])
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(base_config(reader={"name": "precise"})))
    logging.getLogger("atomicrag").handlers.clear()
    assert main(["-q", "index", str(tmp_path / "d.txt"), "--out", str(tmp_path / "idx"), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.count("no vLLM server environment") == 1, err
