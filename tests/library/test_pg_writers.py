"""PostgreSQL writers, like the folder store's: one at a time per index (an advisory lock), and a
writer whose loaded version is stale gets IndexChangedError instead of dropping another's document."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.library.io import IndexChangedError

from .conftest import DOCS, base_config

pytestmark = pytest.mark.pg


@pytest.fixture()
def schema(pg_uri: str, request: pytest.FixtureRequest) -> str:
    name = f"w_{request.node.name[:40].lower().replace('[', '_').replace(']', '_')}"
    AtomicRAG(base_config(), progress=False).index(DOCS[:4]).save(store="pg", uri=pg_uri, schema=name)
    return name


def _ids(uri: str, schema: str) -> set[str]:
    return {d.id for d in AtomicRAG.load(uri=uri, schema=schema, progress=False).documents}


def test_a_stale_writer_gets_index_changed_and_loses_nothing(pg_uri: str, schema: str) -> None:
    a = AtomicRAG.load(uri=pg_uri, schema=schema, progress=False)
    b = AtomicRAG.load(uri=pg_uri, schema=schema, progress=False)
    a.insert(DOCS[4])
    a.save(store="pg", uri=pg_uri, schema=schema)
    b.insert(DOCS[5])
    with pytest.raises(IndexChangedError, match=rf"{schema}.*another writer.*load it again"):
        b.save(store="pg", uri=pg_uri, schema=schema)
    assert DOCS[4]["doc_id"] in _ids(pg_uri, schema)  # the first writer's document is kept
    b = AtomicRAG.load(uri=pg_uri, schema=schema, progress=False)  # the advice works
    b.insert(DOCS[5])
    b.save(store="pg", uri=pg_uri, schema=schema)
    a.insert(DOCS[6])
    with pytest.raises(IndexChangedError):  # a's own last save is no longer the latest either
        a.save(store="pg", uri=pg_uri, schema=schema)
    assert {DOCS[4]["doc_id"], DOCS[5]["doc_id"]} <= _ids(pg_uri, schema)


_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from atomicrag import AtomicRAG
    from atomicrag.library.io import IndexChangedError
    uri, schema, doc_id, ready, go = sys.argv[1:6]
    rag = AtomicRAG.load(uri=uri, schema=schema, progress=False)
    rag.insert({"doc_id": doc_id, "text": f"{doc_id} is a city on the Rhine River in Germany."})
    Path(ready).touch()
    while not Path(go).exists():
        time.sleep(0.01)
    try:
        rag.save(store="pg", uri=uri, schema=schema)
    except IndexChangedError as exc:
        print(exc, file=sys.stderr)
        sys.exit(3)
""")


def test_two_processes_that_load_insert_and_save_never_both_succeed_silently(pg_uri: str, schema: str,
                                                                             tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    go = tmp_path / "go"
    procs = []
    for name in ("cologne", "bonn"):
        procs.append(subprocess.Popen([sys.executable, "-c", _WRITER, pg_uri, schema, name,
                                       str(tmp_path / f"{name}.ready"), str(go)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + 240
    while not all((tmp_path / f"{n}.ready").exists() for n in ("cologne", "bonn")):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            [p.communicate() for p in procs if p.poll() is not None]
        time.sleep(0.05)
    go.touch()  # both hold a loaded index with their own new document: save at once
    results = {name: (p.wait(timeout=240), p.stderr.read()) for name, p in zip(("cologne", "bonn"), procs)}
    codes = sorted(code for code, _ in results.values())
    assert codes == [0, 3], results  # one saved, the other was told, never both "fine"
    winner = next(name for name, (code, _) in results.items() if code == 0)
    loser = next(name for name, (code, _) in results.items() if code == 3)
    ids = _ids(pg_uri, schema)
    assert winner in ids and loser not in ids
    assert "another writer" in results[loser][1]


def test_writers_of_one_schema_wait_for_each_other(pg_uri: str, schema: str) -> None:
    """The writer lock is a transaction-scoped advisory lock: a save waits while another holds it."""
    import psycopg

    from atomicrag.library.storage.pgvector import advisory_key

    rag = AtomicRAG.load(uri=pg_uri, schema=schema, progress=False)
    done = threading.Event()
    with psycopg.connect(pg_uri) as other, other.transaction():
        other.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key(schema),))
        worker = threading.Thread(target=lambda: (rag.save(store="pg", uri=pg_uri, schema=schema), done.set()))
        worker.start()
        time.sleep(1.5)
        assert not done.is_set()  # waiting for the other writer
    worker.join(timeout=60)
    assert done.is_set()
