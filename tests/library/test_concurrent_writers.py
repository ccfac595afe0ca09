"""One writer at a time per index folder, across processes, and readers that always get one whole
version while another process replaces the folder."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.library.io import IndexChangedError
from tests.library.conftest import DOCS, base_config

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "atomicrag.library.cli"]


@pytest.fixture()
def index_dir(tmp_path: Path) -> Path:
    path = tmp_path / "index"
    AtomicRAG(base_config(), progress=False).index(DOCS[:6]).save(path)
    return path


def test_two_concurrent_cli_inserts_keep_both_documents(index_dir: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "alpha.txt", tmp_path / "beta.txt"
    a.write_text("Alpha Centauri is the closest star system to the Sun.")
    b.write_text("Betelgeuse is a red supergiant in the constellation Orion.")
    procs = [subprocess.Popen([*CLI, "-q", "insert", str(p), "--index", str(index_dir)], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in (a, b)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-1500:] for o in outs]
    ids = {d.id for d in AtomicRAG.load(index_dir, progress=False).documents}
    assert {"alpha", "beta"} <= ids and len(ids) == 8


def test_a_stale_writer_is_refused_instead_of_losing_the_other_writers_document(index_dir: Path) -> None:
    first, second = AtomicRAG.load(index_dir, progress=False), AtomicRAG.load(index_dir, progress=False)
    first.insert([{"doc_id": "one", "text": "The first writer adds this document about Lisbon."}])
    first.save(index_dir)
    second.insert([{"doc_id": "two", "text": "The second writer adds this document about Porto."}])
    with pytest.raises(IndexChangedError, match="another writer"):
        second.save(index_dir)
    assert "one" in {d.id for d in AtomicRAG.load(index_dir, progress=False).documents}
    first.insert([{"doc_id": "three", "text": "The first writer saves again: its own version is known."}])
    first.save(index_dir)  # no error: the version on disk is the one it wrote


def test_loads_during_repeated_saves_always_get_a_whole_version(index_dir: Path, tmp_path: Path) -> None:
    writer = tmp_path / "writer.py"
    writer.write_text(f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
from atomicrag import AtomicRAG
from tests.library.conftest import DOCS, base_config
small = AtomicRAG(base_config(), progress=False).index(DOCS[:6])
large = AtomicRAG(base_config(), progress=False).index(DOCS[:12])
print("ready", flush=True)
end = time.time() + 20
while time.time() < end:
    for rag in (small, large):
        rag._versions.clear()  # a writer that owns the folder: replace it in turn, as fast as it can
        rag.save({str(index_dir)!r})
""")
    proc = subprocess.Popen([sys.executable, str(writer)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-1500:]
        sizes = []
        end, cap = time.time() + 12, time.time() + 90  # on a loaded machine a load takes seconds: go on to 5
        while (time.time() < end or len(sizes) < 5) and time.time() < cap:
            rag = AtomicRAG.load(index_dir, progress=False)
            sizes.append(len(rag.documents))
    finally:
        proc.kill()
        proc.wait()
    assert len(sizes) >= 5 and set(sizes) <= {6, 12}
