"""A damaged LLM cache (garbage, half-written, damaged pages) is named with paths.llm_cache and
either moved aside and started afresh (found at start) or stops the run with how to fix it
(found mid-run); never a bare sqlite3 error."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from atomicrag.llm.cache import CachedLLM, LLMCacheDamagedError
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.protocol import ChatRequest

REQUESTS = [ChatRequest(messages=[{"role": "user", "content": f"question {i} " * 40}]) for i in range(200)]


def _filled(path: Path) -> list[str]:
    with CachedLLM(FakeLLM("m"), path) as c:
        return [r.text for r in c.chat(REQUESTS)]


@pytest.mark.parametrize("damage", ["garbage", "half"])
def test_damaged_file_found_at_start_is_moved_aside_and_the_run_succeeds(tmp_path: Path, caplog, damage: str) -> None:
    path = tmp_path / "llm.sqlite"
    want = _filled(tmp_path / "ref.sqlite")
    if damage == "garbage":
        path.write_bytes(b"not a database " * 500)
    else:
        data = (tmp_path / "ref.sqlite").read_bytes()
        path.write_bytes(data[: len(data) // 2])  # killed mid-copy
    bad = path.read_bytes()
    with caplog.at_level("WARNING", logger="atomicrag"):
        cache = CachedLLM(FakeLLM("m"), path)
    with cache:
        assert [r.text for r in cache.chat(REQUESTS)] == want and len(cache) == len(REQUESTS)
    assert cache.moved_to is not None and cache.moved_to.name.startswith("llm.sqlite.damaged-")
    assert cache.moved_to.read_bytes() == bad  # kept, untouched
    assert str(path) in caplog.text and "paths.llm_cache" in caplog.text and str(cache.moved_to) in caplog.text
    with CachedLLM(FakeLLM("m"), path) as again:  # the new file is whole: all hits
        again.chat(REQUESTS)
        assert again.hits == len(REQUESTS) and again.moved_to is None


def test_damaged_pages_anywhere_never_raise_a_bare_sqlite_error(tmp_path: Path) -> None:
    ref = tmp_path / "ref.sqlite"
    want = _filled(ref)
    data = ref.read_bytes()
    seen = set()
    for offset in range(0, len(data), 4096):  # one damaged page at a time
        path = tmp_path / f"p{offset}.sqlite"
        damaged = bytearray(data)
        damaged[offset: offset + 4096] = b"\xff" * 4096
        path.write_bytes(bytes(damaged))
        try:
            with CachedLLM(FakeLLM("m"), path) as c:
                got = [r.text for r in c.chat(REQUESTS)]
                seen.add("moved" if c.moved_to else "read")
                assert got == want
        except LLMCacheDamagedError as exc:  # found mid-run: stops with the file, the key and the fix
            seen.add("refused")
            assert str(path) in str(exc) and "paths.llm_cache" in str(exc) and "mv " in str(exc)
            assert isinstance(exc.__cause__, sqlite3.DatabaseError)
    assert "moved" in seen and "refused" in seen, seen
