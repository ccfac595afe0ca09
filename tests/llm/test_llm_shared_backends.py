"""One launched server per run: the rows of a run (main + baselines) share the LLM backend."""
from __future__ import annotations

from pathlib import Path

import pytest

from atomicrag.core.config import LLMConfig, PathsConfig
from atomicrag.llm import factory
from atomicrag.llm.protocol import ChatRequest


class _Counting:
    """Stands in for a launched server: counts builds and stops."""

    built = 0
    closed = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.model = "counting"
        self.stopped = False

    def chat(self, requests: list[ChatRequest]) -> list:
        assert not self.stopped, "a stopped backend was used"
        return []

    def close(self) -> None:
        self.stopped = True
        type(self).closed += 1


@pytest.fixture()
def counting(monkeypatch: pytest.MonkeyPatch) -> type[_Counting]:
    _Counting.built = _Counting.closed = 0
    monkeypatch.setattr(factory, "build_backend", lambda cfg, paths: _Counting())
    return _Counting


def test_rows_of_one_scope_share_one_backend(counting: type[_Counting], tmp_path: Path) -> None:
    paths = PathsConfig(cache_dir=str(tmp_path), llm_cache=str(tmp_path / "c.sqlite"))
    cfg = LLMConfig(name="fake", model="fake", cache=False)
    with factory.shared_backends():
        first = factory.build_llm(cfg, paths)
        first.close()  # a row finishing must not stop the server the next row uses
        second = factory.build_llm(cfg, paths)
        second.chat([])
        other = factory.build_llm(LLMConfig(name="fake", model="fake", cache=False, temperature=0.5), paths)
        assert counting.built == 2 and counting.closed == 0  # one per distinct LLM config
        other.close()
    assert counting.closed == 2  # the scope stops what it built


def test_without_a_scope_each_build_owns_its_backend(counting: type[_Counting], tmp_path: Path) -> None:
    paths = PathsConfig(cache_dir=str(tmp_path), llm_cache=str(tmp_path / "c.sqlite"))
    cfg = LLMConfig(name="fake", model="fake", cache=False)
    a, b = factory.build_llm(cfg, paths), factory.build_llm(cfg, paths)
    a.close()
    b.close()
    assert counting.built == 2 and counting.closed == 2


def test_quickstart_rows_launch_the_llm_once(counting: type[_Counting], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness: AtomicRAG row + the dense-passage baseline with a reader build one backend."""
    from atomicrag.harness import pipeline
    from atomicrag.harness.config import load_harness_config

    cfg = load_harness_config({"llm": "fake", "embedder": "fake", "reader": {"name": "none"},
                       "judge": {"name": "none"}, "baselines": ["dense_passage"],
                       "paths": {"cache_dir": str(tmp_path / "cache"), "results_dir": str(tmp_path / "res"),
                                 "llm_cache": str(tmp_path / "llm.sqlite")},
                       "dataset": {"limit": 2}})
    built_in_scope: list[int] = []
    real_run_one = pipeline.run_one

    def run_one(c):  # build the LLM inside each row, as a row with a reader does
        built_in_scope.append(id(factory.build_llm(c.llm, c.paths)._backend))
        return real_run_one(c)

    monkeypatch.setattr(pipeline, "run_one", run_one)
    rows = pipeline.run_with_baselines(cfg)
    assert len(rows) == 2
    assert counting.built == 1 and len(set(built_in_scope)) == 1 and counting.closed == 1
