"""Persistence of a library index: a versioned local directory, or PostgreSQL + pgvector.

Directory layout (no pickle anywhere; every file is JSON, JSONL or safetensors)::

    INDEX_DIR/
      manifest.json            format, format_version, atomicrag version, index settings, embedder name/dim,
                               counts, and the SHA-256 and size of every other file ("files")
      documents.jsonl          one Document per line (id, text, title, meta), in corpus order
      doc_state.jsonl          per document: chunk count, triples, atomization failures
      graph/                   graph.io.save_graph: tensors.safetensors, atoms.jsonl, entities.jsonl, graph.json
      synonym_rows.safetensors directed synonym rows (what incremental updates need)

The directory is written beside its destination and swapped into place (``library.swap``: one
atomic exchange on Linux), so a crash never leaves a half-written index, or none, where a good
one was; a save killed between the two renames of the fallback is finished by the next load.
Every file's SHA-256 is in the manifest and checked on load (``library.checksums``).

A PostgreSQL store keeps the graph and the documents through ``storage.pgvector.PgVectorStore``;
the per-document state rides in each document's metadata and the manifest in the graph's meta.
That store does not keep the synonym rows, so the first update after loading from it recomputes
them over all entities. Its writers take an advisory lock and check the version they loaded, as
the folder's do (``IndexChangedError``).

``AtomicRAG.save(store=...)`` picks a store by its ``registry.STORES`` name (``dir``: ``DirStore``,
``pg``: ``PgStore``); each is built as ``(path=, uri=, schema=)`` and saves or loads a ``Snapshot``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atomicrag.core.artifacts import read_jsonl, write_json_atomic, write_jsonl_atomic
from atomicrag.core.config import Config
from atomicrag.engine.api import IndexedGraph, SynonymRows
from atomicrag.library.checksums import folder_digests, verify_digests
from atomicrag.library.index_settings import index_settings
from atomicrag.library.swap import (
    exchange,
    finish_interrupted_save,
    in_progress,
    is_complete,
    leftovers,
    remove_leftovers,
)
from atomicrag.library.types import DocState, Document

FORMAT = "atomicrag-index"
FORMAT_VERSION = 1
_STATE_KEY = "atomicrag_state"  # document metadata key holding the per-document state in PostgreSQL


@dataclass
class Snapshot:
    """Everything a library index holds, in memory."""

    config: Config
    documents: dict[str, Document]  # insertion order = corpus order
    states: dict[str, DocState]
    indexed: IndexedGraph | None
    embedder: dict[str, Any]  # {"name", "dim"} of the embedder that made the vectors


def _version() -> str:
    from atomicrag import __version__

    return __version__


def manifest(snap: Snapshot) -> dict[str, Any]:
    g = snap.indexed.graph if snap.indexed is not None else None
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "atomicrag_version": _version(),
        "saved_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # the index settings only: a saved index carries no paths, endpoints or programs (index_settings)
        "config": index_settings(dataclasses.asdict(snap.config)), "embedder": snap.embedder,
        "documents": len(snap.documents), "atoms": g.num_atoms if g else 0, "entities": g.num_entities if g else 0,
    }


def check_manifest(info: dict[str, Any], where: str) -> None:
    if info.get("format") != FORMAT:
        raise ValueError(f"{where} is not an atomicrag index (format={info.get('format')!r})")
    if info.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{where} holds index format version {info.get('format_version')!r}; this atomicrag "
                         f"{_version()} reads version {FORMAT_VERSION} (re-index with this version)")


# ----------------------------------------------------------------------------- directory
class IndexChangedError(RuntimeError):
    """Another writer saved the index (folder or PostgreSQL schema) after this object loaded (or last saved) it."""


_HELD: dict[str, list[Any]] = {}  # lock file -> [open file, depth]: the lock is re-entrant in a process
_HELD_GUARD = threading.Lock()


@contextmanager
def index_lock(path: str | Path, timeout_s: float = 600.0) -> Iterator[None]:
    """One writer at a time per index folder, across processes: an exclusive ``flock`` on
    ``.NAME.lock`` beside the folder (not inside it: the folder itself is swapped on save).
    Re-entrant within a process (the CLI holds it from load to save; ``save`` takes it again)."""
    import fcntl

    path = Path(path).resolve()
    lock_path = path.parent / f".{path.name}.lock"
    key = str(lock_path)
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None:
            held[1] += 1
    if held is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path, "a+")  # noqa: SIM115 - held until the outermost exit
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    handle.close()
                    raise TimeoutError(f"{path}: another process has held the index's write lock "
                                       f"({lock_path}) for {timeout_s:.0f} s") from None
                time.sleep(0.05)
        with _HELD_GUARD:
            _HELD[key] = [handle, 1]
    try:
        yield
    finally:
        with _HELD_GUARD:
            entry = _HELD[key]
            entry[1] -= 1
            if entry[1] == 0:
                del _HELD[key]
                fcntl.flock(entry[0].fileno(), fcntl.LOCK_UN)
                entry[0].close()


def version_token(path: str | Path) -> str | None:
    """Which save of the folder is there now: every save writes a new manifest.json (a new inode),
    so its inode and modification time name the version; None while there is no index."""
    try:
        st = os.stat(Path(path) / "manifest.json")
    except FileNotFoundError:
        return None
    return f"{st.st_ino}:{st.st_mtime_ns}"


def save_dir(snap: Snapshot, path: str | Path, expect: str | None = None) -> str | None:
    """Write the index to ``path`` under its write lock and return the new version token.
    ``expect``: the version this object loaded or last saved there; a different one on disk
    means another writer saved in between, and overwriting it would lose that writer's changes."""
    with index_lock(path):
        restored = finish_interrupted_save(Path(path))
        if restored is not None and expect is None:
            # the caller saw no index there (a CLI `index` after "no such index"): never overwrite
            # the copy that was just restored without being asked again
            raise FileExistsError(f"{path}: an interrupted save had left the index beside it ({restored.name}); it "
                                  "is restored in place and was not overwritten: load it, or save again to overwrite it")
        current = version_token(path)
        if expect is not None and current is not None and current != expect:
            raise IndexChangedError(
                f"{path} was saved by another writer after this index was loaded from it; its changes would "
                "be lost: load it again (AtomicRAG.load) and repeat the update")
        _save_dir(snap, path)
        return version_token(path)


def _save_dir(snap: Snapshot, path: str | Path) -> Path:
    from safetensors.torch import save_file

    from atomicrag.engine.api import save_graph

    path = Path(path)
    if path.exists() and not (path / "manifest.json").is_file() and (not path.is_dir() or any(path.iterdir())):
        raise FileExistsError(f"{path} exists and is not an atomicrag index; refusing to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        write_jsonl_atomic(tmp / "documents.jsonl", [d.to_dict() for d in snap.documents.values()])
        write_jsonl_atomic(tmp / "doc_state.jsonl", [snap.states[i].to_record(i) for i in snap.documents])
        if snap.indexed is not None:
            save_graph(snap.indexed.graph, tmp / "graph")
            if snap.indexed.rows is not None:
                save_file(snap.indexed.rows.to_tensors(), str(tmp / "synonym_rows.safetensors"))
        info = manifest(snap)
        info["files"] = folder_digests(tmp)  # load verifies every file against these (library.checksums)
        write_json_atomic(tmp / "manifest.json", info)  # last: its presence marks a complete index
        if not (path / "manifest.json").is_file():
            os.replace(tmp, path)  # no index there (or an empty folder): one atomic rename
        elif not exchange(tmp, path):  # swapped in one step: tmp now holds the old version
            # no atomic exchange here: two renames; a writer killed between them leaves two complete
            # copies beside the path, and the next load or save finishes the swap (library.swap)
            os.replace(path, path.parent / f".{path.name}.old-{os.getpid()}")
            os.replace(tmp, path)
    finally:
        # the temporary folders are deleted only once the path holds a complete index: an error
        # between the two renames leaves the copies for finish_interrupted_save
        if is_complete(path):
            for p in (tmp, path.parent / f".{path.name}.old-{os.getpid()}"):
                if p.exists():
                    shutil.rmtree(p)
        elif tmp.exists() and not is_complete(tmp):
            shutil.rmtree(tmp)  # a half-written new version: the old one is still in place
    remove_leftovers(path)  # folders of earlier saves that were killed
    return path


def _group_atoms(snap_docs: dict[str, Document], graph: Any) -> dict[str, list[Any]]:
    by_doc: dict[str, list[Any]] = defaultdict(list)
    for a in graph.atoms if graph is not None else []:
        if a.passage_id not in snap_docs:
            raise ValueError(f"index is inconsistent: atom {a.id!r} belongs to unknown document {a.passage_id!r}")
        by_doc[a.passage_id].append(a)
    return by_doc


def load_dir(path: str | Path, attempts: int = 40) -> tuple[dict[str, Any], Snapshot]:
    """(manifest, snapshot) of one whole version of an index directory, also while another process
    replaces it: a read that saw the folder change under it (its manifest's version differs before
    and after, or a file vanished mid-swap) is read again; the result carries ``info["version"]``.
    A save that was killed between its two renames is finished first (``swap.finish_interrupted_save``)."""
    from atomicrag.engine.api import IndexDamagedError

    _finish_interrupted(Path(path))
    for attempt in range(attempts):
        before = version_token(path)
        try:
            info, snap = _load_dir(path)
        except (IndexDamagedError, FileNotFoundError, OSError):
            if attempt + 1 < attempts and (version_token(path) != before or in_progress(Path(path))):
                time.sleep(0.02 * (attempt + 1))
                continue
            raise
        if version_token(path) == before:
            info["version"] = before
            return info, snap
        time.sleep(0.02 * (attempt + 1))
    raise TimeoutError(f"{path} kept changing while it was read ({attempts} tries): is a writer saving in a loop?")


def _finish_interrupted(path: Path) -> None:
    """Finish a killed save under the write lock, when there is one to finish (a reader takes the
    lock only then)."""
    if is_complete(path) or not any(is_complete(p) for p in leftovers(path)):
        return
    with index_lock(path):
        finish_interrupted_save(path)


def _load_dir(path: str | Path) -> tuple[dict[str, Any], Snapshot]:
    """(manifest, snapshot) of an index directory; the config is re-validated by the caller.

    Every file is checked against the manifest (document, atom and entity counts; tensor shapes
    and node-id ranges); a missing, truncated or inconsistent file raises ``IndexDamagedError``
    naming it, never an empty or partial index that a later save would write back.
    """
    from safetensors.torch import load_file

    from atomicrag.engine.api import (
        check_count,
        check_synonym_rows,
        damaged,
        load_graph,
        read_file,
        read_json_object,
    )

    path = Path(path)
    mpath = path / "manifest.json"
    if not mpath.is_file():
        raise FileNotFoundError(f"{path} is not an atomicrag index (no manifest.json)")
    info = read_json_object(mpath)
    check_manifest(info, str(path))
    verify_digests(path, info.get("files"))  # one changed byte anywhere is refused, naming the file
    if not isinstance(info.get("config"), dict):
        raise damaged(mpath, "it holds no 'config' object")
    docs = read_file(path / "documents.jsonl",
                     lambda p: {d["id"]: Document.from_dict(d) for d in read_jsonl(p)})
    check_count(path / "documents.jsonl", "documents", len(docs), info.get("documents"))
    graph = None
    if (path / "graph").is_dir():
        graph = load_graph(path / "graph")
    elif info.get("atoms") or info.get("entities"):
        raise damaged(path / "graph", f"the folder is missing, but manifest.json lists {info.get('atoms')} atoms")
    check_count(path / "graph" / "atoms.jsonl", "atoms", graph.num_atoms if graph else 0, info.get("atoms"))
    check_count(path / "graph" / "entities.jsonl", "entities", graph.num_entities if graph else 0, info.get("entities"))
    dim = (info.get("embedder") or {}).get("dim")
    if graph is not None and graph.atom_embeddings is not None and isinstance(dim, int) \
            and graph.atom_embeddings.shape[1] != dim:
        raise damaged(path / "graph" / "tensors.safetensors", f"embeddings have dim {graph.atom_embeddings.shape[1]}, "
                                                              f"manifest.json says {dim}")
    rows = None
    rpath = path / "synonym_rows.safetensors"
    if rpath.is_file():
        t = read_file(rpath, lambda p: load_file(str(p)))
        check_synonym_rows(rpath, t, graph.num_entities if graph else 0)
        rows = SynonymRows.from_tensors(t)
    by_doc = _group_atoms(docs, graph)
    records = read_file(path / "doc_state.jsonl", lambda p: {r["id"]: r for r in read_jsonl(p)})
    if set(records) != set(docs):
        raise damaged(path, "doc_state.jsonl and documents.jsonl list different documents")
    states = read_file(path / "doc_state.jsonl",
                       lambda p: {i: DocState.from_record(records[i], by_doc.get(i, [])) for i in docs})
    indexed = IndexedGraph(graph, rows) if graph is not None else None
    remove_leftovers(path)
    return info, Snapshot(Config(), docs, states, indexed, dict(info.get("embedder") or {}))


# ----------------------------------------------------------------------------- PostgreSQL
def save_pg(snap: Snapshot, uri: str, schema: str = "atomicrag", expect: str | None = None) -> str:
    """Write the index to PostgreSQL in one transaction, holding the schema's writer lock, and
    return the new version. ``expect``: the version this object loaded or last saved there; another
    one there means another writer saved in between (``IndexChangedError``, nothing written)."""
    from atomicrag.library.storage.pgvector import PgVectorStore, StaleVersionError

    if snap.indexed is None:
        raise ValueError("nothing to save: the index is empty (PostgreSQL stores need a graph)")
    graph = snap.indexed.graph
    docs = [{"id": d.id, "title": d.title, "text": d.text, "meta": d.meta,
             _STATE_KEY: snap.states[d.id].to_record(d.id)} for d in snap.documents.values()]
    saved_meta = graph.meta
    graph.meta = {**saved_meta, "library": manifest(snap)}
    try:
        with PgVectorStore(uri, schema) as store:
            return store.save(graph, docs, expect_version=expect)
    except StaleVersionError as exc:
        raise IndexChangedError(f"{exc}; its changes would be lost: load it again (AtomicRAG.load(uri=...)) and "
                                "repeat the update") from None
    finally:
        graph.meta = saved_meta


def load_pg(uri: str, schema: str = "atomicrag") -> tuple[dict[str, Any], Snapshot]:
    from atomicrag.library.storage.pgvector import PgVectorStore

    with PgVectorStore(uri, schema) as store:
        # one transaction: the graph and the documents of the same save (a writer waits for it)
        with store.connect().transaction():
            graph = store.load()
            raw_docs = store.load_documents()
        version = store.loaded_version
    info = graph.meta.pop("library", None)
    if not info:
        raise ValueError(f"PostgreSQL schema {schema!r} holds a graph that was not saved by AtomicRAG.save")
    check_manifest(info, f"PostgreSQL schema {schema!r}")
    from atomicrag.engine.api import check_count, check_graph

    where = Path(f"PostgreSQL schema {schema}")
    check_graph(graph, where)  # shapes and node-id ranges, as for a directory
    for what, found in (("documents", len(raw_docs)), ("atoms", graph.num_atoms), ("entities", graph.num_entities)):
        check_count(where, what, found, info.get(what))
    docs: dict[str, Document] = {}
    records: dict[str, dict[str, Any]] = {}
    for d in raw_docs:
        docs[d["id"]] = Document(d["id"], d["text"], d.get("title") or "", dict(d.get("meta") or {}))
        records[d["id"]] = d.get(_STATE_KEY) or {}
    by_doc = _group_atoms(docs, graph)
    states = {i: DocState.from_record(records[i], by_doc.get(i, [])) for i in docs}
    info["version"] = version
    return info, Snapshot(Config(), docs, states, IndexedGraph(graph, None), dict(info.get("embedder") or {}))


# ----------------------------------------------------------------------------- the stores
class DirStore:
    """``store="dir"``: the versioned local directory ``path``."""

    def __init__(self, path: str | Path | None = None, **_: Any) -> None:
        if path is None:
            raise ValueError("save(path): a directory path is required")
        self.path = Path(path)

    def save(self, snap: Snapshot, expect: str | None = None) -> str | None:
        return save_dir(snap, self.path, expect)

    def load(self) -> tuple[dict[str, Any], Snapshot]:
        return load_dir(self.path)


class PgStore:
    """``store="pg"``: PostgreSQL + pgvector at ``uri``, in ``schema``."""

    def __init__(self, uri: str | None = None, schema: str = "atomicrag", **_: Any) -> None:
        if not uri:
            raise ValueError('store="pg" needs uri="postgresql://..."')
        self.uri, self.schema = uri, schema

    def save(self, snap: Snapshot, expect: str | None = None) -> str:
        return save_pg(snap, self.uri, self.schema, expect)  # one transaction, under the schema's writer lock

    def load(self) -> tuple[dict[str, Any], Snapshot]:
        return load_pg(self.uri, self.schema)


# ----------------------------------------------------------------------------- plain export
def export_data(docs: dict[str, Document], graph: Any, path: str | Path | None = None, *,
                embeddings: bool = False) -> dict[str, Any]:
    """Documents, atoms, entities and edges (``[src, dst, weight]`` per type) as plain data."""
    data: dict[str, Any] = {"documents": [d.to_dict() for d in docs.values()], "atoms": [], "entities": [],
                            "edges": {}}
    if graph is not None:
        data["atoms"] = [a.to_dict() for a in graph.atoms]
        data["entities"] = [{"key": k, "text": t} for k, t in zip(graph.entity_keys, graph.entity_texts)]
        data["edges"] = {name: [[int(s), int(d), float(w)] for s, d, w in
                                zip(e.src.tolist(), e.dst.tolist(), e.weight.tolist())]
                         for name, e in graph.edges.items()}
        if embeddings:
            for recs, emb in ((data["atoms"], graph.atom_embeddings), (data["entities"], graph.entity_embeddings)):
                for rec, vec in zip(recs, emb.tolist()):
                    rec["embedding"] = vec
    if path is not None:
        Path(path).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return data

