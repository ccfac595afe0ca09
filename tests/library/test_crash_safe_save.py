"""A save never leaves a moment with no index at its path, and a save killed between its two
renames (where no atomic exchange exists) is finished by the next load; the copies it left are
never deleted while they are the only complete ones (library/swap.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.library import io, swap
from atomicrag.library.cli import main

from .conftest import DOCS, base_config

NEW = {"doc_id": "added", "text": "Vienna is the capital of Austria. Sigmund Freud lived in Vienna."}


@pytest.fixture()
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "idx"
    AtomicRAG(base_config(), progress=False).index(DOCS[:5]).save(path)
    return path


def _ids(path: Path) -> list[str]:
    return [d.id for d in AtomicRAG.load(path, progress=False).documents]


def test_exchange_swaps_two_folders_in_one_step(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    assert swap.exchange(a, b)  # Linux: renameat2(RENAME_EXCHANGE)
    assert ((a / "x").read_text(), (b / "x").read_text()) == ("b", "a")


def test_a_save_swaps_with_one_atomic_exchange(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the exchange works, the path is never renamed away: os.replace never moves it."""
    moved = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (moved.append(Path(src)), real(src, dst))[1])
    rag = AtomicRAG.load(saved, progress=False)
    rag.insert(NEW)
    rag.save(saved)
    assert saved not in moved
    assert "added" in _ids(saved)
    assert not swap.leftovers(saved)


def test_an_error_between_the_two_renames_is_finished_by_load(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rag = AtomicRAG.load(saved, progress=False)
    rag.insert(NEW)
    monkeypatch.setattr(io, "exchange", lambda a, b: False, raising=False)  # no atomic exchange here
    real = os.replace

    def crash_after_first_rename(src: str | Path, dst: str | Path) -> None:
        if Path(dst) == saved:
            raise OSError("simulated crash between the two renames")
        real(src, dst)

    monkeypatch.setattr(os, "replace", crash_after_first_rename)
    with pytest.raises(OSError, match="simulated crash"):
        rag.save(saved)
    monkeypatch.setattr(os, "replace", real)
    assert not saved.exists()
    assert sorted(p.name.split("-")[0] for p in swap.leftovers(saved)) == [".idx.old", ".idx.tmp"]  # both kept
    assert "added" in _ids(saved)  # load put the new, complete copy in place
    assert not swap.leftovers(saved)  # and only then deleted the other one


_KILLED_SAVE = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from atomicrag import AtomicRAG
    from atomicrag.library import io
    path = Path(sys.argv[1])
    rag = AtomicRAG.load(path, progress=False)
    rag.insert({"doc_id": "added", "text": "Vienna is the capital of Austria."})
    io.exchange = lambda a, b: False  # the two-rename fallback
    real = os.replace
    def killed_after_first_rename(src, dst):
        real(src, dst)
        if Path(src) == path:
            os.kill(os.getpid(), signal.SIGKILL)
    os.replace = killed_after_first_rename
    rag.save(path)
""")


def test_a_writer_killed_between_renames_loses_nothing_even_when_the_cli_advice_is_followed(
        saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(saved)], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert not saved.exists() and len(swap.leftovers(saved)) == 2
    assert swap.remove_leftovers(saved) == []  # the only complete copies: never deleted

    # following the advice a missing index gets (build one with `atomicrag index`) must not delete them
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "one.txt").write_text("Bern is the capital of Switzerland.")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(__import__("json").dumps(base_config()))
    assert main(["-q", "index", str(docs), "--out", str(saved), "--config", str(cfg)]) != 0
    assert "interrupted save" in capsys.readouterr().err
    ids = _ids(saved)
    assert "added" in ids and "curie" in ids  # the killed writer's complete new version, restored
    assert not swap.leftovers(saved)
