"""load() verifies what it reads: counts, shapes, ranges, readable files, build settings, leftovers."""
from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from atomicrag import AtomicRAG

from .conftest import DOCS, base_config

IndexDamagedError = ValueError  # atomicrag.graph.verify.IndexDamagedError is one; messages are checked too


@pytest.fixture()
def signed(tmp_path: Path) -> Path:
    """A saved index as this atomicrag writes it: its manifest lists every file's SHA-256."""
    rag = AtomicRAG(base_config(), progress=False)
    rag.index(DOCS[:8])
    path = tmp_path / "idx"
    rag.save(path)
    return path


@pytest.fixture()
def saved(signed: Path) -> Path:
    """The same index without the digests (as saved before them): the structural checks below
    are what guards such an index, and they stay behind the digests of a new one."""
    mpath = signed / "manifest.json"
    info = json.loads(mpath.read_text())
    del info["files"]
    mpath.write_text(json.dumps(info))
    return signed


def _flip_byte(f: Path, offset: int) -> None:
    data = bytearray(f.read_bytes())
    data[offset] ^= 0x01
    f.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["graph/tensors.safetensors", "graph/atoms.jsonl", "documents.jsonl",
                                  "doc_state.jsonl", "graph/entities.jsonl", "synonym_rows.safetensors"])
def test_one_flipped_byte_is_refused_naming_the_file(signed: Path, name: str) -> None:
    f = signed / name
    data = f.read_bytes()
    # a byte of the content that still parses: the last byte of a tensor file (an embedding or
    # weight), a letter inside a JSON string of a JSONL file
    marker = next((m for m in (b'"text": "', b'"key": "', b'"chunks": ') if m in data), None)
    offset = len(data) - 1 if name.endswith(".safetensors") else data.index(marker) + len(marker) + 1 \
        if marker != b'"chunks": ' else data.index(marker) + len(marker)  # 1 chunk -> 0 chunks
    _flip_byte(f, offset)
    with pytest.raises(IndexDamagedError) as info:
        AtomicRAG.load(signed)
    assert str(f) in str(info.value) and "sha256 differs" in str(info.value)


def test_digests_cover_every_file_and_a_size_change_is_named(signed: Path) -> None:
    listed = json.loads((signed / "manifest.json").read_text())["files"]
    on_disk = {p.relative_to(signed).as_posix() for p in signed.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(listed) == on_disk and all(len(e["sha256"]) == 64 for e in listed.values())
    f = signed / "documents.jsonl"
    f.write_bytes(f.read_bytes() + b"\n")
    with pytest.raises(IndexDamagedError, match=r"documents.jsonl.*bytes, manifest.json records"):
        AtomicRAG.load(signed)


def test_digest_entries_cannot_point_outside_the_index(signed: Path) -> None:
    mpath = signed / "manifest.json"
    info = json.loads(mpath.read_text())
    info["files"]["../outside.txt"] = {"sha256": "0" * 64, "bytes": 1}
    mpath.write_text(json.dumps(info))
    with pytest.raises(IndexDamagedError, match=r"manifest.json.*'../outside.txt'"):
        AtomicRAG.load(signed)


def test_index_without_digests_loads_with_a_warning_and_gets_them_on_save(saved: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        rag = AtomicRAG.load(saved)
    assert "without file checksums" in caplog.text
    rag.save(saved)
    assert "files" in json.loads((saved / "manifest.json").read_text())


def _edit_tensors(path: Path, **changes: torch.Tensor) -> None:
    f = path / "graph" / "tensors.safetensors"
    t = load_file(str(f))
    t.update(changes)
    save_file(t, str(f))


def test_missing_graph_folder_is_an_error_not_an_empty_index(saved: Path) -> None:
    shutil.rmtree(saved / "graph")
    with pytest.raises(IndexDamagedError, match=r"graph.*missing.*atoms"):
        AtomicRAG.load(saved)


def test_document_count_is_checked_against_the_manifest(saved: Path) -> None:
    lines = (saved / "documents.jsonl").read_text().splitlines()
    (saved / "documents.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(IndexDamagedError, match=r"documents.jsonl.*lists 8 documents, but 7"):
        AtomicRAG.load(saved)


def test_embedding_matrix_with_too_few_rows_is_rejected(saved: Path) -> None:
    t = load_file(str(saved / "graph" / "tensors.safetensors"))
    _edit_tensors(saved, atom_embeddings=t["atom_embeddings"][:-1].contiguous())
    with pytest.raises(IndexDamagedError, match=r"tensors.safetensors.*'atom_embeddings' has shape"):
        AtomicRAG.load(saved)


def test_adjacency_columns_out_of_range_are_rejected(saved: Path) -> None:
    t = load_file(str(saved / "graph" / "tensors.safetensors"))
    col = t["adj_col"].clone()
    col[0] = 10_000_000
    _edit_tensors(saved, adj_col=col)
    with pytest.raises(IndexDamagedError, match=r"tensors.safetensors.*'adj_col' holds node ids outside"):
        AtomicRAG.load(saved)


def test_adjacency_with_the_wrong_size_is_rejected(saved: Path) -> None:
    t = load_file(str(saved / "graph" / "tensors.safetensors"))
    _edit_tensors(saved, adj_crow=t["adj_crow"][:-1].contiguous())
    with pytest.raises(IndexDamagedError, match=r"'adj_crow' has shape"):
        AtomicRAG.load(saved)


def test_truncated_safetensors_names_the_file(saved: Path) -> None:
    f = saved / "graph" / "tensors.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with pytest.raises(IndexDamagedError) as info:
        AtomicRAG.load(saved)
    assert str(f) in str(info.value) and "damaged" in str(info.value)


@pytest.mark.parametrize("junk", ["{not json", "[1, 2]", ""])
def test_junk_manifest_names_the_file(saved: Path, junk: str) -> None:
    (saved / "manifest.json").write_text(junk)
    with pytest.raises(IndexDamagedError) as info:
        AtomicRAG.load(saved)
    assert "manifest.json" in str(info.value) and "damaged" in str(info.value)


def test_truncated_jsonl_names_the_file(saved: Path) -> None:
    f = saved / "graph" / "atoms.jsonl"
    f.write_bytes(f.read_bytes()[:-40])
    with pytest.raises(IndexDamagedError, match="atoms.jsonl"):
        AtomicRAG.load(saved)


def test_environment_cannot_change_the_build_settings_of_a_saved_index(saved: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOMICRAG_DATASET__CHUNK_TOKENS", "64")
    with pytest.raises(ValueError, match=r"dataset.chunk_tokens.*ATOMICRAG_DATASET__CHUNK_TOKENS"):
        AtomicRAG.load(saved)
    monkeypatch.delenv("ATOMICRAG_DATASET__CHUNK_TOKENS")
    monkeypatch.setenv("ATOMICRAG_RETRIEVER__TOP_K", "3")  # a query-time setting may change
    rag = AtomicRAG.load(saved)
    assert rag.config.retriever.top_k == 3 and rag.config.dataset.chunk_tokens == 256
    rag.insert({"doc_id": "x", "text": "Vienna is the capital of Austria."})
    rag.save(saved)
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["config"]["dataset"]["chunk_tokens"] == 256


def test_leftover_folders_of_killed_saves_are_cleaned(saved: Path) -> None:
    dead_pid = 2 ** 22 + 12345  # above pid_max on typical systems: no such process
    leftovers = [saved.parent / f".idx.tmp-{dead_pid}", saved.parent / f".idx.old-{dead_pid}"]
    live = saved.parent / f".idx.tmp-{os.getppid()}"  # a save still running elsewhere is left alone
    for p in [*leftovers, live]:
        p.mkdir()
        (p / "manifest.json").write_text("{}")
    AtomicRAG.load(saved)
    assert not any(p.exists() for p in leftovers) and live.exists()
    leftovers[0].mkdir()
    AtomicRAG.load(saved).save(saved)
    assert not leftovers[0].exists()
