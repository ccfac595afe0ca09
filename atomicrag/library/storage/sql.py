"""SQL text, wire encodings and value checks for :mod:`atomicrag.library.storage.pgvector`.

Every statement here is a ``psycopg.sql.SQL`` template: the schema name enters only through
``sql.Identifier`` (after :func:`validate_identifier`) and values only as bound parameters, so
neither a schema name nor a document id can change the meaning of a statement.

Bulk writes use PostgreSQL's binary COPY format; fixed-width rows (edges) are framed as one
numpy structured array (``PGCOPY`` header, then per row an int16 field count and, per field, an
int32 byte length and the big-endian value), embeddings as pgvector's binary value per row.
Bulk reads fetch embeddings as raw binary values in batches, and edges as one bytea per range
aggregated by the server (``string_agg`` of ``int4send``/``float4send``); numpy parses both, so
no Python object is made per float in either direction.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from psycopg import sql
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format

from atomicrag.engine.api import AtomEntityGraph

FORMAT_VERSION = 1
IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
TABLES = ("meta", "documents", "entities", "atoms", "edges", "blobs")
# pgvector's HNSW index accepts ``vector`` columns of at most this many dimensions.
HNSW_MAX_DIM = 2000

# Edge reads aggregate rows into one bytea per query; PostgreSQL caps a value at 1 GB.
PACKED_CHUNK_BYTES = 128 * 2**20
VECTOR_BATCH_ROWS = 8192
EDGE_ROW = np.dtype([("src", ">i4"), ("dst", ">i4"), ("w", ">f4")])  # int4send || int4send || float4send

COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
COPY_HEADER = COPY_SIGNATURE + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"  # flags 0, no extension
COPY_TRAILER = b"\xff\xff"  # int16 -1


def validate_identifier(name: str) -> str:
    """Return ``name`` if it is a plain SQL identifier, else raise ``ValueError``.

    Identifiers are quoted with ``sql.Identifier`` anyway; the pattern additionally keeps names
    portable (no quoting surprises, within PostgreSQL's 63-byte limit).
    """
    if not isinstance(name, str) or not IDENTIFIER_RE.fullmatch(name):
        raise ValueError(f"invalid SQL identifier {name!r}: must match {IDENTIFIER_RE.pattern}")
    return name


def _as_f32(emb: torch.Tensor | np.ndarray | None, rows: int, what: str) -> np.ndarray | None:
    if emb is None:
        return None
    arr = emb.detach().cpu().numpy() if isinstance(emb, torch.Tensor) else np.asarray(emb)
    if arr.dtype != np.float32 or arr.ndim != 2 or arr.shape[0] != rows:
        raise ValueError(f"{what} embeddings must be float32 [{rows}, d]; got {arr.dtype} {arr.shape}")
    return arr


def check_graph(graph: AtomEntityGraph, index: bool) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate what the column types and indexes cannot hold; return the embeddings as numpy."""
    num_e, n = graph.num_entities, graph.num_nodes
    atom_emb = _as_f32(graph.atom_embeddings, graph.num_atoms, "atom")
    ent_emb = _as_f32(graph.entity_embeddings, num_e, "entity")
    for emb, what in ((atom_emb, "atom"), (ent_emb, "entity")):
        if index and emb is not None and emb.shape[1] > HNSW_MAX_DIM:
            raise ValueError(f"{what} embeddings have {emb.shape[1]} dims; pgvector's HNSW index "
                             f"supports <= {HNSW_MAX_DIM}: save with index=False")
    if len(graph.entity_texts) != num_e:
        raise ValueError("entity_keys and entity_texts differ in length")
    if n >= 2**31:
        raise ValueError("graphs with >= 2**31 nodes do not fit int4 node ids")
    for name, e in graph.edges.items():
        if not name:
            raise ValueError("edge type names must be non-empty")
        if e.weight.dtype != torch.float32:  # stored as real: anything wider would be rounded silently
            raise ValueError(f"{name} edge weights must be float32, got {e.weight.dtype}")
        if len(e) and (min(int(e.src.min()), int(e.dst.min())) < 0
                       or max(int(e.src.max()), int(e.dst.max())) >= n):
            raise ValueError(f"{name} edges reference nodes outside [0, {n})")
    return atom_emb, ent_emb


def table(schema: str, name: str) -> sql.Composed:
    return sql.Identifier(schema, name)


def ddl(schema: str, atom_dim: int | None, entity_dim: int | None) -> list[sql.Composed]:
    """CREATE statements for an empty store (indexes on data come after the bulk load)."""
    def vec(d: int | None) -> sql.Composable:
        # A typed column (vector(d)) is required for an HNSW index; untyped when there are no embeddings.
        return sql.SQL("vector({})").format(sql.Literal(int(d))) if d else sql.SQL("vector")

    t = {name: table(schema, name) for name in TABLES}
    return [
        sql.SQL("CREATE TABLE {} (key text PRIMARY KEY, value jsonb NOT NULL)").format(t["meta"]),
        sql.SQL("CREATE TABLE {} (id text PRIMARY KEY, pos int4 NOT NULL, title text, text text NOT NULL, "
                "meta jsonb NOT NULL)").format(t["documents"]),
        sql.SQL("CREATE TABLE {} (idx int4 PRIMARY KEY, key text NOT NULL UNIQUE, text text NOT NULL, "
                "embedding {})").format(t["entities"], vec(entity_dim)),
        sql.SQL("CREATE TABLE {} (idx int4 PRIMARY KEY, id text NOT NULL UNIQUE, text text NOT NULL, "
                "chunk_id text NOT NULL, passage_id text NOT NULL, entities text[] NOT NULL, "
                "span_start int4, span_end int4, embedding {})").format(t["atoms"], vec(atom_dim)),
        # pos keeps each type's edge order so a load returns the identical EdgeList.
        sql.SQL("CREATE TABLE {} (type text NOT NULL, pos int4 NOT NULL, src int4 NOT NULL, "
                "dst int4 NOT NULL, weight real NOT NULL)").format(t["edges"]),
        sql.SQL("CREATE TABLE {} (name text PRIMARY KEY, dtype text NOT NULL, shape int8[] NOT NULL, "
                "data bytea NOT NULL)").format(t["blobs"]),
    ]


def post_load_indexes(schema: str) -> list[sql.Composed]:
    """Plain b-tree indexes for look-ups by passage and by node (neighbourhood queries)."""
    return [
        sql.SQL("CREATE INDEX ON {} (passage_id)").format(table(schema, "atoms")),
        sql.SQL("CREATE INDEX ON {} (src)").format(table(schema, "edges")),
        sql.SQL("CREATE INDEX ON {} (dst)").format(table(schema, "edges")),
    ]


def hnsw_index(schema: str, name: str, m: int, ef_construction: int) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) WITH (m = {}, ef_construction = {})"
    ).format(sql.Identifier(f"{name}_embedding_hnsw"), table(schema, name),
             sql.Literal(int(m)), sql.Literal(int(ef_construction)))


def copy_in(schema: str, name: str, columns: tuple[str, ...]) -> sql.Composed:
    # FREEZE (allowed because save creates the table in the same transaction) writes the rows
    # already frozen: the first reads after a save need not rewrite every page to set hint bits.
    return sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY, FREEZE)").format(
        table(schema, name), sql.SQL(", ").join(map(sql.Identifier, columns)))


def select_vectors(schema: str, name: str) -> sql.Composed:
    return sql.SQL("SELECT embedding FROM {} ORDER BY idx").format(table(schema, name))


def packed_edges(schema: str) -> sql.Composed:
    """Edges of type ``%s`` with ``pos`` in ``[%s, %s)`` as one bytea of :data:`EDGE_ROW` records."""
    return sql.SQL("SELECT string_agg(int4send(src) || int4send(dst) || float4send(weight), ''::bytea "
                   "ORDER BY pos) FROM {} WHERE type = %s AND pos >= %s AND pos < %s").format(table(schema, "edges"))


def lock_all(schema: str, mode: str) -> sql.Composed:
    if mode not in ("SHARE", "EXCLUSIVE"):
        raise ValueError(mode)
    return sql.SQL("LOCK TABLE {} IN {} MODE").format(
        sql.SQL(", ").join(table(schema, n) for n in TABLES), sql.SQL(mode))


def delete_atoms_statements(schema: str) -> list[sql.Composed]:
    """Drop the atoms of some passages and renumber the rest densely, keeping their order.

    Parameters, in order: ``(passage_ids,)``, ``(atom_node_ids, atom_node_ids)`` for the edges,
    then ``(num_entities, num_entities)`` for each of the two edge-column remaps.
    The first statement returns the removed ``idx`` values.
    """
    atoms, edges = table(schema, "atoms"), table(schema, "edges")
    stmts = [
        sql.SQL("DELETE FROM {} WHERE passage_id = ANY(%s) RETURNING idx").format(atoms),
        sql.SQL("DELETE FROM {} WHERE src = ANY(%s) OR dst = ANY(%s)").format(edges),
        sql.SQL("CREATE TEMP TABLE atomicrag_remap (old int4 PRIMARY KEY, new int4 NOT NULL) ON COMMIT DROP"),
        sql.SQL("INSERT INTO atomicrag_remap SELECT idx, (row_number() OVER (ORDER BY idx) - 1)::int4 "
                "FROM {}").format(atoms),
        # Two passes through negative ids so the primary key never sees a transient duplicate.
        sql.SQL("UPDATE {} a SET idx = -1 - r.new FROM atomicrag_remap r WHERE a.idx = r.old").format(atoms),
        sql.SQL("UPDATE {} SET idx = -1 - idx").format(atoms),
    ]
    for col in map(sql.Identifier, ("src", "dst")):
        stmts.append(sql.SQL("UPDATE {} e SET {} = %s + r.new FROM atomicrag_remap r "
                             "WHERE e.{} = %s + r.old AND r.new <> r.old").format(edges, col, col))
    return stmts


# ---------------------------------------------------------------------------------------------
# pgvector binary values


def vector_rows(emb: np.ndarray) -> np.ndarray:
    """``[n, d]`` float32 -> one pgvector binary value per row (int16 dim, int16 0, d big-endian float4).

    Returned as a structured array whose ``tobytes()`` is all rows back to back, so slicing the
    buffer by ``itemsize`` yields each row's payload without building per-row Python floats.
    """
    n, d = emb.shape
    rows = np.empty(n, dtype=np.dtype([("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (d,))]))
    rows["dim"] = d
    rows["unused"] = 0
    rows["v"] = emb
    return rows


def vector_value(vec: np.ndarray) -> bytes:
    return vector_rows(vec.reshape(1, -1)).tobytes()


def row_slices(emb: np.ndarray | None, rows: int) -> Iterable[memoryview | None]:
    """Per-row pgvector binary payloads as views into one buffer (no per-row float objects)."""
    if emb is None:
        return [None] * rows
    buf, step = memoryview(vector_rows(emb).tobytes()), 4 + 4 * emb.shape[1]
    return (buf[i * step:(i + 1) * step] for i in range(rows))


class VectorPayload(bytes):
    """Bytes already in pgvector's binary layout; its own type so psycopg picks VectorDumper."""


class VectorLoader(Loader):
    """Keeps a fetched ``vector`` as its raw binary value, parsed in bulk by :func:`parse_vectors`."""

    format = Format.BINARY

    def load(self, data: Any) -> bytes:
        return bytes(data)


class VectorDumper(Dumper):
    """Passes pre-framed pgvector binary values through; subclassed per connection with its oid."""

    format = Format.BINARY

    def dump(self, obj: Any) -> Any:
        return obj


# ---------------------------------------------------------------------------------------------
# fixed-width binary COPY streams


def edge_copy_stream(type_name: str, pos: np.ndarray, src: np.ndarray, dst: np.ndarray,
                     weight: np.ndarray) -> bytes:
    """Binary COPY data for ``edges (type, pos, src, dst, weight)``: one type, all rows fixed width."""
    tname = type_name.encode("utf-8")
    dt = np.dtype([("nf", ">i2"),
                   ("l_type", ">i4"), ("type", f"S{len(tname)}"),
                   ("l_pos", ">i4"), ("pos", ">i4"),
                   ("l_src", ">i4"), ("src", ">i4"),
                   ("l_dst", ">i4"), ("dst", ">i4"),
                   ("l_w", ">i4"), ("w", ">f4")])
    rows = np.empty(len(src), dtype=dt)
    rows["nf"] = 5
    rows["l_type"], rows["type"] = len(tname), tname
    rows["l_pos"] = rows["l_src"] = rows["l_dst"] = rows["l_w"] = 4
    rows["pos"], rows["src"], rows["dst"], rows["w"] = pos, src, dst, weight
    return COPY_HEADER + rows.tobytes() + COPY_TRAILER


def parse_vectors(data: bytes, dim: int, rows: int) -> np.ndarray:
    """Concatenated pgvector binary values -> ``[rows, dim]`` (big-endian view; assign to convert)."""
    vec_t = np.dtype([("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (dim,))])
    if len(data) != rows * vec_t.itemsize:
        raise ValueError(f"expected {rows} stored {dim}-dim vectors, got {len(data)} bytes "
                         "(missing embeddings or another dimension)")
    parsed = np.frombuffer(data, dtype=vec_t)
    if rows and np.any(parsed["dim"] != dim):
        raise ValueError(f"stored vectors do not have {dim} dimensions")
    return parsed["v"]
