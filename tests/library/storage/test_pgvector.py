"""PgVectorStore against a real PostgreSQL 18 + pgvector 0.8 server (see conftest.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from atomicrag.core.schemas import Atom, Passage
from atomicrag.graph.edges import adjacency
from atomicrag.graph.structure import AtomEntityGraph, EdgeList

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'atomicrag-harness[pg]')")
from atomicrag.library.storage.pgvector import PgVectorStore  # noqa: E402 - only when psycopg is there

pytestmark = pytest.mark.pg

TRICKY = "x'); DROP TABLE atoms; --"


def make_graph(num_e: int = 5, num_a: int = 12, dim: int = 8, seed: int = 0,
               embeddings: bool = True) -> AtomEntityGraph:
    """A small random graph built straight from the dataclasses, with awkward strings inside."""
    rng = np.random.default_rng(seed)
    keys = [f"ent{i}" for i in range(num_e)]
    texts = ["Ünïcode \"quoted\" ent", "tab\there", "new\nline", "back\\slash \\N", "plain"] * num_e
    atoms = []
    for j in range(num_a):
        ents = sorted({keys[int(i)] for i in rng.integers(0, num_e, size=int(rng.integers(0, 3)))})
        atoms.append(Atom(id=f"p{j % 4}::c0::a{j}", text=f"atom {j}: {texts[j % 5]} O'Brien",
                          chunk_id=f"p{j % 4}::c0", passage_id=TRICKY if j % 4 == 3 else f"p{j % 4}",
                          entities=ents, span=(j, j + 7) if j % 2 else None))
    src, dst = [], []
    for j, a in enumerate(atoms):
        for key in a.entities:
            src.append(keys.index(key))
            dst.append(num_e + j)
    contain = EdgeList(torch.tensor(src, dtype=torch.int64), torch.tensor(dst, dtype=torch.int64),
                       torch.ones(len(src), dtype=torch.float32))
    # Deliberately not sorted: the store must keep each type's edge order.
    synonym = EdgeList(torch.tensor([2, 0, 1]), torch.tensor([3, 4, 2]), torch.tensor([0.91, 0.87, 1 / 3]))
    edges = {"containment": contain, "relevance": EdgeList.empty(), "synonym": synonym}
    atom_emb = ent_emb = None
    if embeddings:
        atom_emb = torch.nn.functional.normalize(torch.from_numpy(rng.standard_normal((num_a, dim), np.float32)), dim=1)
        ent_emb = torch.nn.functional.normalize(torch.from_numpy(rng.standard_normal((num_e, dim), np.float32)), dim=1)
        # Values a decimal text round trip would most likely disturb: -0.0 and a subnormal.
        atom_emb[0, 0], atom_emb[0, 1] = -0.0, float(np.float32(1e-45))
    return AtomEntityGraph(entity_keys=keys, entity_texts=texts[:num_e], atoms=atoms, edges=edges,
                           adjacency=adjacency(list(edges.values()), num_e + num_a),
                           atom_embeddings=atom_emb, entity_embeddings=ent_emb, embedder_name="fake/8d",
                           meta={"fidelity": {"entity_nodes": "triples"}, "timings": {"x": 0.25}, "n": [1, 2]})


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


def assert_same_graph(got: AtomEntityGraph, want: AtomEntityGraph) -> None:
    assert got.entity_keys == want.entity_keys
    assert got.entity_texts == want.entity_texts
    assert got.atoms == want.atoms
    assert got.embedder_name == want.embedder_name
    assert got.meta == want.meta
    assert list(got.edges) == list(want.edges)
    for name, e in want.edges.items():
        g = got.edges[name]
        assert g.src.dtype == torch.int64 and g.weight.dtype == torch.float32
        assert torch.equal(g.src, e.src) and torch.equal(g.dst, e.dst) and torch.equal(bits(g.weight), bits(e.weight))
    assert got.adjacency.layout == torch.sparse_csr and got.adjacency.shape == want.adjacency.shape
    for a, b in zip((got.adjacency.crow_indices(), got.adjacency.col_indices(), got.adjacency.values()),
                    (want.adjacency.crow_indices(), want.adjacency.col_indices(), want.adjacency.values())):
        assert a.dtype == b.dtype and torch.equal(a, b)
    for a, b in ((got.atom_embeddings, want.atom_embeddings), (got.entity_embeddings, want.entity_embeddings)):
        if b is None:
            assert a is None
        else:
            assert a.dtype == torch.float32 and a.shape == b.shape
            assert torch.equal(bits(a), bits(b))  # bit-exact, -0.0 and subnormals included


@pytest.fixture
def store(pg_uri: str, request: pytest.FixtureRequest):
    # One schema per test so tests cannot see each other's data.
    with PgVectorStore(pg_uri, schema=f"t_{request.node.name[:50].replace('[', '_').replace(']', '')}") as s:
        yield s


def test_round_trip_is_exact(store: PgVectorStore) -> None:
    graph = make_graph()
    docs = [{"id": "p0", "title": "Zero", "text": "first", "corpus": "c1", "meta": {"k": [1, 2]}},
            {"id": TRICKY, "title": None, "text": "it's \\N here\tand\nthere"}]
    assert not store.exists()
    with pytest.raises(LookupError, match="no graph saved"):
        store.load()
    store.save(graph, documents=docs)
    assert store.exists()
    assert_same_graph(store.load(), graph)
    assert store.load_documents() == docs
    assert store.load_documents([TRICKY]) == [docs[1]]


def test_round_trip_without_embeddings(store: PgVectorStore) -> None:
    graph = make_graph(embeddings=False)
    store.save(graph)
    assert_same_graph(store.load(), graph)
    assert store.load_documents() == []


def test_custom_adjacency_is_stored_not_rebuilt(store: PgVectorStore) -> None:
    # An adjacency that differs from the edges' default combination (e.g. re-weighted types)
    # must come back as saved, not as a rebuild from the edges.
    graph = make_graph()
    graph.adjacency = torch.sparse_csr_tensor(graph.adjacency.crow_indices(), graph.adjacency.col_indices(),
                                              graph.adjacency.values() * 0.5, size=graph.adjacency.shape)
    store.save(graph)
    mode = store.connect().execute(
        psycopg.sql.SQL("SELECT value->>'mode' FROM {} WHERE key = 'adjacency'")
        .format(psycopg.sql.Identifier(store.schema, "meta"))).fetchone()[0]
    assert mode == "stored"
    assert_same_graph(store.load(), graph)


def test_passages_are_accepted_as_documents(store: PgVectorStore) -> None:
    passages = [Passage(id="p0", text="body", title="T", corpus="hotpotqa", meta={"url": "u"})]
    store.save(make_graph(), documents=passages)
    assert store.load_documents() == [passages[0].to_dict()]


def test_hnsw_cosine_search_finds_the_nearest_atom(store: PgVectorStore) -> None:
    num_a, dim = 2000, 32
    graph = make_graph(num_e=5, num_a=num_a, dim=dim, seed=1)
    store.save(graph)
    emb = graph.atom_embeddings
    rng = np.random.default_rng(7)
    for target in (3, 777, 1999):
        query = emb[target] + 0.05 * torch.from_numpy(rng.standard_normal(dim, np.float32))
        hits = store.search_atoms(query, k=5)
        assert len(hits) == 5
        assert hits[0][0] == graph.atoms[target].id
        exact = torch.nn.functional.cosine_similarity(emb, query[None], dim=1)
        assert hits[0][1] == pytest.approx(float(exact[target]), abs=1e-5)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    # The search really runs on the HNSW index (cosine opclass), not a sequential scan.
    conn = store.connect()
    plan = "\n".join(r[0] for r in conn.execute(
        psycopg.sql.SQL("EXPLAIN SELECT id FROM {} ORDER BY embedding <=> %s::vector LIMIT 5")
        .format(psycopg.sql.Identifier(store.schema, "atoms")), (str(emb[0].tolist()),)).fetchall())
    assert "atoms_embedding_hnsw" in plan
    indexdef = conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
                            (store.schema, "atoms_embedding_hnsw")).fetchone()[0]
    assert "hnsw" in indexdef and "vector_cosine_ops" in indexdef
    # k above the default ef_search (40) still yields k results, best first.
    many = store.search_atoms(emb[5], k=100)
    assert len(many) == 100 and many[0][0] == graph.atoms[5].id
    # Entities are searchable the same way.
    assert store.search_entities(graph.entity_embeddings[2], k=1)[0][0] == graph.entity_keys[2]


def test_search_rejects_wrong_dimension(store: PgVectorStore) -> None:
    store.save(make_graph())
    with pytest.raises(psycopg.errors.DataException):
        store.search_atoms(np.ones(3, np.float32), k=1)


@pytest.mark.parametrize("schema", ["x; DROP TABLE atoms", 'a"b', "1abc", "", "a" * 64, "sch.ema", "ä"])
def test_schema_name_injection_is_rejected(pg_uri: str, schema: str) -> None:
    with pytest.raises(ValueError, match="invalid SQL identifier"):
        PgVectorStore(pg_uri, schema=schema)


def test_hostile_ids_are_stored_literally(store: PgVectorStore) -> None:
    graph = make_graph()
    store.save(graph, documents=[{"id": TRICKY, "text": "t"}, {"id": "p0", "text": "u"}])
    loaded = store.load()
    assert [a.passage_id for a in loaded.atoms].count(TRICKY) == 3
    assert store.load_documents([TRICKY])[0]["id"] == TRICKY
    n = store.connect().execute(
        psycopg.sql.SQL("SELECT count(*) FROM {} WHERE id = %s").format(psycopg.sql.Identifier(store.schema,
                                                                                             "documents")),
        (TRICKY,)).fetchone()[0]
    assert n == 1 and store.table_sizes()["atoms"] > 0  # the atoms table is still there


def test_save_twice_replaces_everything(store: PgVectorStore) -> None:
    store.save(make_graph(num_e=5, num_a=12, dim=8), documents=[{"id": "old", "text": "old"}])
    second = make_graph(num_e=7, num_a=20, dim=16, seed=3)
    store.save(second, documents=[{"id": "new", "text": "new"}])
    assert_same_graph(store.load(), second)
    assert [d["id"] for d in store.load_documents()] == ["new"]


def test_failed_save_leaves_previous_content(store: PgVectorStore) -> None:
    first = make_graph()
    store.save(first)
    broken = make_graph(seed=5)
    broken.atoms[1].id = broken.atoms[0].id  # violates atoms.id UNIQUE half-way through the COPY
    with pytest.raises(psycopg.errors.UniqueViolation):
        store.save(broken)
    assert_same_graph(store.load(), first)


def test_delete_documents_drops_atoms_and_renumbers(store: PgVectorStore) -> None:
    graph = make_graph(num_e=5, num_a=12)
    store.save(graph, documents=[{"id": p, "text": p} for p in ("p0", "p1", "p2", TRICKY)])
    counts = store.delete_documents(["p1", TRICKY])
    keep = [j for j, a in enumerate(graph.atoms) if a.passage_id not in ("p1", TRICKY)]
    assert counts["documents"] == 2 and counts["atoms"] == len(graph.atoms) - len(keep)
    got = store.load()
    assert got.atoms == [graph.atoms[j] for j in keep]
    assert torch.equal(got.atom_embeddings, graph.atom_embeddings[keep])
    # Expected edges: the old ones whose atom survives, atom node ids mapped to the new order.
    num_e = graph.num_entities
    remap = {num_e + old: num_e + new for new, old in enumerate(keep)}
    for name, e in graph.edges.items():
        pairs = [(remap.get(s, s), remap.get(d, d)) for s, d in zip(e.src.tolist(), e.dst.tolist())
                 if (s < num_e or s in remap) and (d < num_e or d in remap)]
        assert list(zip(got.edges[name].src.tolist(), got.edges[name].dst.tolist())) == pairs
    expected_adj = adjacency(list(got.edges.values()), got.num_nodes)
    assert torch.equal(got.adjacency.values(), expected_adj.values())
    assert [d["id"] for d in store.load_documents()] == ["p0", "p2"]
    assert all(hit[0] in {a.id for a in got.atoms} for hit in store.search_atoms(graph.atom_embeddings[0], k=20))
