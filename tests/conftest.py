"""Shared fixtures. Tests never reach a model hub: the offline models come from packages."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
# the suite never finds (or stops) a server the user keeps up with `atomicrag serve`
os.environ.setdefault("ATOMICRAG_STATE_DIR", tempfile.mkdtemp(prefix="atomicrag-test-state-"))

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = ROOT / "conf"


@pytest.fixture(scope="session")
def smoke_data() -> Path:
    """The smoke sets that ship in the package (atomicrag/datasets): present in every clone and
    install, so the tests that use them never depend on data outside the repository."""
    from atomicrag.core.config import PathsConfig

    path = PathsConfig().data_roots()[-1]
    assert (path / "2wikimultihopqa" / "smoke" / "questions.jsonl").is_file(), path
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    skip_gpu = pytest.mark.skip(reason="needs CUDA (run on the accelerator machine)")
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)


@pytest.fixture
def released_checkout(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A synthetic checkout of the released code (invented texts) named by the environment, for
    tests of the switches that read it (embed_instruction=released, prompts=released); returns its
    embedding instructions by linking method."""
    from atomicrag.prompts.released import ENV_VAR, load
    from tests.prompts.released_tree import make_tree

    root = make_tree(tmp_path_factory.mktemp("released_checkout"))
    monkeypatch.setenv(ENV_VAR, str(root))
    return dict(load(str(root.resolve())).instructions)
