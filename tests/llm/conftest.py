"""Fixtures for the LLM tests."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_stub_server import StubServer


@pytest.fixture()
def stub() -> Iterator[StubServer]:
    server = StubServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
