"""A cache that cannot be written (a full or read-only disk) is an error naming the file and the
setting that places it, never a bare ``sqlite3.OperationalError`` or a ``SafetensorError`` that
names no file. Simulated in-process (the exception a full disk raises), and for real on a full
200 KiB tmpfs in a private mount namespace where that is allowed."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from atomicrag.embed.cache import EmbeddingCacheWriteError, embed_cached
from atomicrag.embed.fake import FakeEmbedder
from atomicrag.library.cli_errors import error_line
from atomicrag.llm.cache import CachedLLM, LLMCacheIOError
from atomicrag.llm.fake import FakeLLM

from .conftest import can_mount

ROOT = Path(__file__).resolve().parents[2]


def test_llm_cache_that_cannot_be_written_names_file_and_setting(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = sqlite3.connect

    class FullDisk:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self._conn = conn

        def execute(self, *args: object) -> object:
            raise sqlite3.OperationalError("database or disk is full")  # what SQLite says on ENOSPC

        def __getattr__(self, name: str) -> object:
            return getattr(self._conn, name)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: FullDisk(real_connect(*a, **k)))
    path = tmp_path / "llm.sqlite"
    with pytest.raises(LLMCacheIOError) as info:
        CachedLLM(FakeLLM("m"), path)
    line = error_line(info.value)  # what the CLI prints: no "internal error"
    assert str(path) in line and "paths.llm_cache" in line and "database or disk is full" in line
    assert not line.startswith("internal error")


def test_llm_cache_read_error_mid_run_names_file_and_setting(tmp_path: Path) -> None:
    from atomicrag.llm.protocol import ChatRequest

    cached = CachedLLM(FakeLLM("m"), tmp_path / "llm.sqlite")

    class Broken:
        def execute(self, *args: object) -> object:
            raise sqlite3.OperationalError("disk I/O error")

    cached._local.conn = Broken()  # this thread's connection now fails as a dying disk does
    with pytest.raises(LLMCacheIOError, match=r"llm.sqlite \(paths.llm_cache\): disk I/O error"):
        cached.chat([ChatRequest(messages=[{"role": "user", "content": "hi"}])])


def test_embedding_cache_that_cannot_be_written_names_file_and_setting(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from safetensors import SafetensorError

    import atomicrag.embed.cache as emb_cache

    def full_disk(*args: object, **kwargs: object) -> None:  # safetensors' own error for ENOSPC
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, '
                              'message: "No space left on device" })')

    monkeypatch.setattr(emb_cache, "save_file", full_disk)
    path = tmp_path / "emb.safetensors"
    with pytest.raises(EmbeddingCacheWriteError) as info:
        embed_cached(FakeEmbedder(dim=16), ["a text", "another"], path)
    line = error_line(info.value)
    assert str(path) in line and "paths.cache_dir" in line and "No space left" in line
    assert not list(tmp_path.iterdir())  # no half-written file left


_FULL_DISK = textwrap.dedent("""
    import json, subprocess, sys
    full = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", full], check=True)
    subprocess.run(["dd", "if=/dev/zero", "of=" + full + "/fill", "bs=1k", "count=1000"],
                   capture_output=True)  # fails when the disk is full: that is the point
    from atomicrag.embed.cache import embed_cached
    from atomicrag.embed.fake import FakeEmbedder
    from atomicrag.library.cli_errors import error_line
    from atomicrag.llm.cache import CachedLLM
    from atomicrag.llm.fake import FakeLLM
    out = {}
    for name, make in (("llm", lambda: CachedLLM(FakeLLM("m"), full + "/llm.sqlite")),
                       ("emb", lambda: embed_cached(FakeEmbedder(dim=64), ["text %d" % i for i in range(2000)],
                                                    full + "/emb.safetensors"))):
        try:
            make()
            out[name] = "no error"
        except Exception as exc:
            out[name] = [type(exc).__name__, error_line(exc)]
    print(json.dumps(out))
""")


@pytest.mark.skipif(not can_mount(), reason="no private mount namespace here (unshare -rm + mount)")
def test_caches_on_a_real_full_disk_name_file_and_setting(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    proc = subprocess.run(["unshare", "-rm", sys.executable, "-c", _FULL_DISK, str(full)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["llm"][0] == "LLMCacheIOError", out
    assert f"{full}/llm.sqlite" in out["llm"][1] and "paths.llm_cache" in out["llm"][1]
    assert out["emb"][0] == "EmbeddingCacheWriteError", out
    assert f"{full}/emb.safetensors" in out["emb"][1] and "paths.cache_dir" in out["emb"][1]
