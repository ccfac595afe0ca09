"""PostgreSQL + pgvector store for an :class:`~atomicrag.graph.structure.AtomEntityGraph`.

    store = PgVectorStore("postgresql://user:pass@host:5432/db", schema="atomicrag")
    version = store.save(graph, documents=[p.to_dict() for p in passages])   # all-or-nothing replace
    graph = store.load()                                            # exact round trip; store.loaded_version
    store.save(graph2, expect_version=version)   # StaleVersionError if another writer saved in between
    hits = store.search_atoms(query_vec, k=10)                      # HNSW, cosine

Tables (in ``schema``): ``meta(key, value jsonb)``, ``documents(id, title, text, meta jsonb)``,
``entities(idx, key, text, embedding)``, ``atoms(idx, id, text, chunk_id, passage_id, entities[],
span_start, span_end, embedding)``, ``edges(type, pos, src, dst, weight)`` and ``blobs`` (the
adjacency CSR arrays as raw bytes). ``idx`` is the node order; ``src`` and ``dst`` are global node
ids (entities first, then atoms), exactly as in the in-memory graph; ``pos`` keeps edge order.
HNSW indexes (``vector_cosine_ops``) on both embedding columns are built after the bulk load.

Unlike the original library's adapter, SQL is never assembled from strings (identifiers go
through ``psycopg.sql.Identifier``, values are bound parameters) and embeddings travel as
pgvector's binary format framed with numpy, so float32 values round-trip bit for bit.

Writers: every save (and ``delete_documents``) runs in one transaction that first takes a
transaction-scoped advisory lock for its schema (``pg_advisory_xact_lock``: one writer at a time
per index, released at commit or rollback), then reads the schema's ``version`` (a new random
token each save writes into ``meta``). A writer that passes ``expect_version`` (the version it
loaded) and finds another one gets ``StaleVersionError`` and changes nothing, as the folder store's
``IndexChangedError``: two processes that each load, add a document and save never silently lose
one. A load reads the graph and its version under one ``SHARE`` lock, i.e. one committed state.
"""
from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import psycopg
import torch
from psycopg import sql
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb
from typing_extensions import Self

from atomicrag.core.schemas import Atom
from atomicrag.engine.api import AtomEntityGraph, EdgeList
from atomicrag.engine.api import adjacency as build_adjacency
from atomicrag.library.storage import sql as q

_DOC_FIELDS = ("id", "title", "text")


UNVERSIONED = "unversioned"  # the version of a schema saved before versions were kept


class StaleVersionError(RuntimeError):
    """The schema was saved by another writer since the version this writer expected."""


def advisory_key(schema: str) -> int:
    """The 64-bit advisory-lock key of one schema's writers (the same in every process)."""
    return int.from_bytes(hashlib.sha256(f"atomicrag-index:{schema}".encode()).digest()[:8], "big", signed=True)


def _csr_parts(adj: torch.Tensor) -> list[torch.Tensor]:
    return [adj.crow_indices(), adj.col_indices(), adj.values()]


class PgVectorStore:
    """An Atom-Entity Graph in one PostgreSQL schema. Point ``uri`` at any server with pgvector.

    One connection is opened lazily and reused; use the store as a context manager (or call
    :meth:`close`) to release it.
    """

    def __init__(self, uri: str, schema: str = "atomicrag", *, hnsw_m: int = 16,
                 hnsw_ef_construction: int = 64, maintenance_work_mem: str | None = "1GB") -> None:
        self.uri = uri
        self.schema = q.validate_identifier(schema)
        self.hnsw_m = hnsw_m
        self.hnsw_ef_construction = hnsw_ef_construction
        # HNSW builds far faster when the whole graph fits in maintenance_work_mem; the setting
        # is applied with is_local=true, i.e. only inside the save transaction.
        self.maintenance_work_mem = maintenance_work_mem
        self._conn: psycopg.Connection | None = None
        self._vec_oid: int | None = None  # per connection: reset whenever a new one is opened
        self._ef: int | None = None  # hnsw.ef_search currently set on the connection
        self.loaded_version: str | None = None  # the version the last load() read

    # -- connection ---------------------------------------------------------------------------

    def connect(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            # autocommit + explicit conn.transaction() blocks: each public call is one transaction.
            self._conn = psycopg.connect(self.uri, autocommit=True)
            self._vec_oid = self._ef = None
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _t(self, name: str) -> sql.Composed:
        return q.table(self.schema, name)

    def _vector_oid(self, conn: psycopg.Connection) -> int:
        """The ``vector`` type's oid on ``conn``, with our binary dumper registered (once per connection)."""
        if self._vec_oid is not None:
            return self._vec_oid
        info = TypeInfo.fetch(conn, "vector")
        if info is None:
            raise RuntimeError("the pgvector extension is not installed in this database "
                               "(run CREATE EXTENSION vector as a privileged user)")
        dumper = type("VectorDumper", (q.VectorDumper,), {"oid": info.oid})
        conn.adapters.register_dumper(q.VectorPayload, dumper)
        conn.adapters.register_dumper(None, dumper)  # by oid, for COPY set_types
        conn.adapters.register_loader(info.oid, q.VectorLoader)
        self._vec_oid = info.oid
        return info.oid

    # -- save -----------------------------------------------------------------------------------

    def _lock_writers(self, cur: psycopg.Cursor) -> str | None:
        """Take this schema's writer lock for the transaction and return the version saved there
        now (None: nothing saved yet)."""
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key(self.schema),))
        if not self.exists():
            return None
        cur.execute(sql.SQL("SELECT value FROM {} WHERE key = 'version'").format(self._t("meta")))
        row = cur.fetchone()
        return str(row[0]) if row is not None else UNVERSIONED

    def _check_version(self, current: str | None, expect: str | None) -> None:
        if expect is not None and current is not None and current != expect:
            raise StaleVersionError(f"PostgreSQL schema {self.schema!r} was saved by another writer (version "
                                    f"{current[:8]}) after this one read version {expect[:8]}")

    def save(self, graph: AtomEntityGraph, documents: Sequence[dict[str, Any] | Any] | None = None, *,
             index: bool = True, expect_version: str | None = None) -> str:
        """Replace the schema's content with ``graph`` (and ``documents``) in one transaction and
        return the new version. ``expect_version``: the version this writer read (``loaded_version``);
        another one there raises ``StaleVersionError`` and nothing changes.

        ``documents`` are dicts (or objects with ``to_dict``, e.g. :class:`Passage`) with ``id``,
        ``text`` and optional ``title``; every other key is kept in ``meta``. Saving without
        documents leaves the documents table empty. ``index=False`` skips the HNSW indexes
        (search then scans exactly). On any error nothing changes. ``graph.meta`` is stored as
        jsonb: it must be JSON-serialisable, tuples come back as lists and key order is not kept.
        """
        atom_emb, ent_emb = q.check_graph(graph, index)
        n = graph.num_nodes
        # The CSR is stored as saved (a few % of the total size): load then needs no rebuild, and
        # stays exact even if the adjacency rule in graph/edges.py or the type weights change.
        adj = graph.adjacency.cpu()
        adj = adj if adj.layout == torch.sparse_csr else adj.to_sparse_csr()
        if tuple(adj.shape) != (n, n):
            raise ValueError(f"adjacency has shape {tuple(adj.shape)}, expected ({n}, {n})")
        docs = [d.to_dict() if hasattr(d, "to_dict") else dict(d) for d in (documents or [])]
        meta: dict[str, Any] = {
            "format_version": q.FORMAT_VERSION,
            "embedder_name": graph.embedder_name,
            "atom_dim": None if atom_emb is None else int(atom_emb.shape[1]),
            "entity_dim": None if ent_emb is None else int(ent_emb.shape[1]),
            "num_entities": graph.num_entities, "num_atoms": graph.num_atoms,
            "edge_types": list(graph.edges),
            "adjacency": {"mode": "stored", "shape": list(adj.shape)},
            "graph_meta": graph.meta,
        }
        try:
            json.dumps(meta, allow_nan=False)
        except (TypeError, ValueError) as ex:
            raise ValueError(f"graph.meta must be JSON-serialisable (no NaN): {ex}") from ex

        conn = self.connect()
        try:
            with conn.transaction():
                if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                    # Only when missing: creating an extension needs privileges a user may not have.
                    conn.execute("CREATE EXTENSION vector")
                vec_oid = self._vector_oid(conn)  # before the cursor: a cursor copies the adapters it sees
                with conn.cursor() as cur:
                    self._check_version(self._lock_writers(cur), expect_version)
                    meta["version"] = uuid.uuid4().hex
                    self._write(cur, graph, docs, meta, atom_emb, ent_emb, vec_oid, adj, index)
        except BaseException:
            self._vec_oid = None  # the rollback may have undone a CREATE EXTENSION
            raise
        return str(meta["version"])

    def _write(self, cur: psycopg.Cursor, graph: AtomEntityGraph, docs: list[dict[str, Any]],
               meta: dict[str, Any], atom_emb: np.ndarray | None, ent_emb: np.ndarray | None, vec_oid: int,
               adj: torch.Tensor, index: bool) -> None:
        schema = self.schema
        cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        for name in q.TABLES:
            # No CASCADE: a user's view on these tables makes the save fail instead of vanishing.
            cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._t(name)))
        for stmt in q.ddl(schema, meta["atom_dim"], meta["entity_dim"]):
            cur.execute(stmt)

        with cur.copy(q.copy_in(schema, "documents", ("pos", "id", "title", "text", "meta"))) as cp:
            cp.set_types(["int4", "text", "text", "text", "jsonb"])
            for i, d in enumerate(docs):
                if "id" not in d or "text" not in d:
                    raise ValueError(f"a document needs 'id' and 'text'; got keys {sorted(d)}")
                extra = {k: v for k, v in d.items() if k not in _DOC_FIELDS}
                cp.write_row((i, str(d["id"]), d.get("title", ""), d["text"], Jsonb(extra)))

        ent_vecs = q.row_slices(ent_emb, graph.num_entities)
        with cur.copy(q.copy_in(schema, "entities", ("idx", "key", "text", "embedding"))) as cp:
            cp.set_types(["int4", "text", "text", vec_oid])
            for i, (key, text, vec) in enumerate(zip(graph.entity_keys, graph.entity_texts, ent_vecs)):
                cp.write_row((i, key, text, vec))

        atom_vecs = q.row_slices(atom_emb, graph.num_atoms)
        cols = ("idx", "id", "text", "chunk_id", "passage_id", "entities", "span_start", "span_end", "embedding")
        with cur.copy(q.copy_in(schema, "atoms", cols)) as cp:
            cp.set_types(["int4", "text", "text", "text", "text", "text[]", "int4", "int4", vec_oid])
            for i, (a, vec) in enumerate(zip(graph.atoms, atom_vecs)):
                s0, s1 = a.span if a.span is not None else (None, None)
                cp.write_row((i, a.id, a.text, a.chunk_id, a.passage_id, list(a.entities), s0, s1, vec))

        for name, e in graph.edges.items():
            with cur.copy(q.copy_in(schema, "edges", ("type", "pos", "src", "dst", "weight"))) as cp:
                cp.write(q.edge_copy_stream(name, np.arange(len(e), dtype=np.int32),
                                            e.src.cpu().numpy(), e.dst.cpu().numpy(), e.weight.cpu().numpy()))
        for part, t in zip(("crow_indices", "col_indices", "values"), _csr_parts(adj)):
            cur.execute(sql.SQL("INSERT INTO {} (name, dtype, shape, data) VALUES (%s, %s, %s, %s)")
                        .format(self._t("blobs")),
                        (f"adjacency.{part}", str(t.dtype).removeprefix("torch."), list(t.shape),
                         t.cpu().contiguous().numpy().tobytes()))
        cur.executemany(sql.SQL("INSERT INTO {} (key, value) VALUES (%s, %s)").format(self._t("meta")),
                        [(k, Jsonb(v)) for k, v in meta.items()])

        for stmt in q.post_load_indexes(schema):
            cur.execute(stmt)
        if index and self.maintenance_work_mem and (atom_emb is not None or ent_emb is not None):
            cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", (self.maintenance_work_mem,))
        for name, emb in (("atoms", atom_emb), ("entities", ent_emb)):
            if index and emb is not None:
                cur.execute(q.hnsw_index(schema, name, self.hnsw_m, self.hnsw_ef_construction))
        for name in ("documents", "entities", "atoms", "edges"):
            cur.execute(sql.SQL("ANALYZE {}").format(self._t(name)))  # planner statistics for search

    # -- load -----------------------------------------------------------------------------------

    def _lock_for_read(self, cur: psycopg.Cursor) -> None:
        # SHARE conflicts with every writer (save's DROP, delete_documents) but not with other
        # readers: each statement of the load then sees the same committed state.
        cur.execute(q.lock_all(self.schema, "SHARE"))

    def _meta(self, cur: psycopg.Cursor) -> dict[str, Any]:
        cur.execute(sql.SQL("SELECT key, value FROM {}").format(self._t("meta")))
        meta = dict(cur.fetchall())
        version = meta.get("format_version")
        if version != q.FORMAT_VERSION:
            raise ValueError(f"schema {self.schema!r} holds store format {version!r}; "
                             f"this atomicrag reads format {q.FORMAT_VERSION}")
        return meta

    def _relation_size(self, name: str) -> int | None:
        row = self.connect().execute(
            "SELECT pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s", (self.schema, name)).fetchone()
        return None if row is None else int(row[0])

    def exists(self) -> bool:
        """Whether the schema holds a saved graph."""
        return self._relation_size("meta") is not None

    def load(self) -> AtomEntityGraph:
        """Read the whole graph back: same node order, edges per type, bit-exact embeddings."""
        if not self.exists():
            raise LookupError(f"no graph saved in schema {self.schema!r}")
        conn = self.connect()
        self._vector_oid(conn)  # registers VectorLoader; must precede the cursor, which copies adapters
        with conn.transaction(), conn.cursor() as cur:
            self._lock_for_read(cur)
            meta = self._meta(cur)
            self.loaded_version = str(meta.get("version", UNVERSIONED))
            num_e, num_a = int(meta["num_entities"]), int(meta["num_atoms"])
            cur.execute(sql.SQL("SELECT key, text FROM {} ORDER BY idx").format(self._t("entities")))
            ents = cur.fetchall()
            cur.execute(sql.SQL("SELECT id, text, chunk_id, passage_id, entities, span_start, span_end "
                                "FROM {} ORDER BY idx").format(self._t("atoms")), binary=True)
            atoms = [Atom(id=r[0], text=r[1], chunk_id=r[2], passage_id=r[3], entities=list(r[4]),
                          span=None if r[5] is None else (int(r[5]), int(r[6]))) for r in cur.fetchall()]
            if len(ents) != num_e or len(atoms) != num_a:
                raise ValueError(f"store is inconsistent: meta says {num_e} entities / {num_a} atoms, "
                                 f"tables hold {len(ents)} / {len(atoms)}")
            atom_emb = self._read_vectors(cur, "atoms", meta["atom_dim"], num_a)
            ent_emb = self._read_vectors(cur, "entities", meta["entity_dim"], num_e)
            cur.execute(sql.SQL("SELECT type, max(pos) FROM {} GROUP BY type").format(self._t("edges")))
            max_pos = dict(cur.fetchall())
            edges = {name: self._read_edges(cur, name, max_pos.get(name)) for name in meta["edge_types"]}
            adj = self._read_adjacency(cur, meta, edges, num_e + num_a)
        return AtomEntityGraph(
            entity_keys=[r[0] for r in ents], entity_texts=[r[1] for r in ents], atoms=atoms, edges=edges,
            adjacency=adj, atom_embeddings=atom_emb, entity_embeddings=ent_emb,
            embedder_name=meta["embedder_name"], meta=meta["graph_meta"],
        )

    @staticmethod
    def _read_packed(cur: psycopg.Cursor, stmt: sql.Composable, params: Sequence[Any]) -> bytes:
        # One bytea aggregated by the server, fetched in binary: one round trip and no per-row
        # Python objects (a COPY TO stream is read one row per call, ~10x slower here).
        row = cur.execute(stmt, params, binary=True).fetchone()
        return b"" if row is None or row[0] is None else bytes(row[0])

    def _read_vectors(self, cur: psycopg.Cursor, name: str, dim: int | None, n: int) -> torch.Tensor | None:
        if dim is None:
            return None
        dim = int(dim)
        out = np.empty((n, dim), dtype=np.float32)
        # Raw binary values (VectorLoader) fetched in batches: bounded memory, no per-float objects.
        # Measured faster than a server-side string_agg, whose growing bytea costs more than rows.
        cur.execute(q.select_vectors(self.schema, name), binary=True)
        lo = 0
        while batch := cur.fetchmany(q.VECTOR_BATCH_ROWS):
            if any(r[0] is None for r in batch):
                raise ValueError(f"{name}: some rows have no embedding")
            out[lo:lo + len(batch)] = q.parse_vectors(b"".join(r[0] for r in batch), dim, len(batch))
            lo += len(batch)
        if lo != n:
            raise ValueError(f"{name}: expected {n} embeddings, found {lo}")
        return torch.from_numpy(out)

    def _read_edges(self, cur: psycopg.Cursor, name: str, max_pos: int | None) -> EdgeList:
        step = q.PACKED_CHUNK_BYTES // q.EDGE_ROW.itemsize
        parts = [np.frombuffer(self._read_packed(cur, q.packed_edges(self.schema), (name, lo, lo + step)),
                               dtype=q.EDGE_ROW)
                 for lo in range(0, (max_pos if max_pos is not None else -1) + 1, step)]
        rows = np.concatenate([np.empty(0, dtype=q.EDGE_ROW), *parts])
        return EdgeList(torch.from_numpy(rows["src"].astype(np.int64)), torch.from_numpy(rows["dst"].astype(np.int64)),
                        torch.from_numpy(rows["w"].astype(np.float32)))

    def _read_adjacency(self, cur: psycopg.Cursor, meta: dict[str, Any], edges: dict[str, EdgeList],
                        n: int) -> torch.Tensor:
        info = meta["adjacency"]
        if info["mode"] == "rebuilt":
            # After delete_documents: the saved CSR no longer matches the renumbered nodes.
            return build_adjacency(list(edges.values()), n)
        cur.execute(sql.SQL("SELECT name, dtype, shape, data FROM {} WHERE name LIKE %s")
                    .format(self._t("blobs")), ("adjacency.%",), binary=True)  # binary: raw bytea, not hex
        parts = {name.split(".", 1)[1]: torch.from_numpy(
            np.frombuffer(bytes(data), dtype=np.dtype(dtype)).reshape(shape).copy())
            for name, dtype, shape, data in cur.fetchall()}
        return torch.sparse_csr_tensor(parts["crow_indices"], parts["col_indices"], parts["values"],
                                       size=tuple(info["shape"]))

    def load_documents(self, ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Documents as dicts (``id``, ``title``, ``text`` plus the saved extra keys), in saved order."""
        where = sql.SQL("WHERE id = ANY(%s)") if ids is not None else sql.SQL("")
        params = (list(ids),) if ids is not None else ()
        rows = self.connect().execute(sql.SQL("SELECT id, title, text, meta FROM {} {} ORDER BY pos")
                                      .format(self._t("documents"), where), params).fetchall()
        return [{"id": i, "title": t, "text": x, **m} for i, t, x, m in rows]

    # -- search ---------------------------------------------------------------------------------

    def _search(self, table: str, key: str, query_vec: Any, k: int, ef_search: int | None
                ) -> list[tuple[str, float]]:
        qv = query_vec.detach().cpu().numpy() if isinstance(query_vec, torch.Tensor) else np.asarray(query_vec)
        qv = qv.astype(np.float32).reshape(-1)
        conn = self.connect()
        self._vector_oid(conn)
        payload = q.VectorPayload(q.vector_value(qv))
        # ef_search bounds how many candidates HNSW returns, so it must be >= k for k results. It is
        # set per session and only when it changes: a search is then a single round trip.
        ef = max(ef_search or 40, int(k))
        if self._ef != ef:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
            self._ef = ef
        rows = conn.execute(sql.SQL("SELECT {}, 1 - (embedding <=> %s) FROM {} ORDER BY embedding <=> %s LIMIT %s")
                            .format(sql.Identifier(key), self._t(table)), (payload, payload, int(k))).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def search_atoms(self, query_vec: Any, k: int = 10, *, ef_search: int | None = None
                     ) -> list[tuple[str, float]]:
        """Top-``k`` atoms by cosine similarity (HNSW, approximate): ``[(atom_id, similarity)]``."""
        return self._search("atoms", "id", query_vec, k, ef_search)

    def search_entities(self, query_vec: Any, k: int = 10, *, ef_search: int | None = None
                        ) -> list[tuple[str, float]]:
        """Top-``k`` entities by cosine similarity: ``[(entity_key, similarity)]``."""
        return self._search("entities", "key", query_vec, k, ef_search)

    # -- maintenance ----------------------------------------------------------------------------

    def delete_documents(self, passage_ids: Iterable[str]) -> dict[str, int]:
        """Remove documents, their atoms and every edge touching those atoms, in one transaction.

        Remaining atoms are renumbered densely (order kept) so a later :meth:`load` yields a valid
        graph. Entities stay, even if no atom mentions them any more. The adjacency is afterwards
        rebuilt from the edges on load (a stored custom adjacency no longer applies).
        Returns how many documents, atoms and edges were removed.
        """
        ids = list(dict.fromkeys(str(p) for p in passage_ids))
        conn = self.connect()
        with conn.transaction(), conn.cursor() as cur:
            self._lock_writers(cur)
            cur.execute(q.lock_all(self.schema, "EXCLUSIVE"))  # writers wait; searches go on
            meta = self._meta(cur)
            num_e = int(meta["num_entities"])
            delete_atoms, delete_edges, *renumber, remap_src, remap_dst = q.delete_atoms_statements(self.schema)
            cur.execute(delete_atoms, (ids,))
            removed = sorted(r[0] for r in cur.fetchall())
            n_edges = 0
            if removed:
                nodes = [num_e + i for i in removed]
                cur.execute(delete_edges, (nodes, nodes))
                n_edges = cur.rowcount
                for stmt in renumber:
                    cur.execute(stmt)
                cur.execute(remap_src, (num_e, num_e))
                cur.execute(remap_dst, (num_e, num_e))
                cur.execute(sql.SQL("DELETE FROM {}").format(self._t("blobs")))
                new_meta = {"num_atoms": int(meta["num_atoms"]) - len(removed),
                            "adjacency": {"mode": "rebuilt",
                                          "shape": [num_e + int(meta["num_atoms"]) - len(removed)] * 2}}
                for k, v in new_meta.items():
                    cur.execute(sql.SQL("UPDATE {} SET value = %s WHERE key = %s").format(self._t("meta")),
                                (Jsonb(v), k))
            cur.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(self._t("documents")), (ids,))
            n_docs = cur.rowcount
            # a new version: a writer that read the schema before this change must not overwrite it
            cur.execute(sql.SQL("DELETE FROM {} WHERE key = 'version'").format(self._t("meta")))
            cur.execute(sql.SQL("INSERT INTO {} (key, value) VALUES ('version', %s)").format(self._t("meta")),
                        (Jsonb(uuid.uuid4().hex),))
        return {"documents": n_docs, "atoms": len(removed), "edges": n_edges}

    def table_sizes(self) -> dict[str, int]:
        """Bytes on disk per table, indexes and TOAST included (``pg_total_relation_size``)."""
        return {name: self._relation_size(name) or 0 for name in q.TABLES}
