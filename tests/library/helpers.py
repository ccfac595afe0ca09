"""Comparisons of two indexes: graph structure and query results."""
from __future__ import annotations

from typing import Any

import torch

from atomicrag import AtomicRAG

from .conftest import QUESTIONS

TOL = 1e-5


def edge_map(edges: Any) -> dict[tuple[int, int], float]:
    return {(int(s), int(d)): float(w) for s, d, w in zip(edges.src, edges.dst, edges.weight)}


def assert_same_graph(a: Any, b: Any) -> None:
    """Same node order, same edges of every type (weights within TOL), same adjacency and embeddings."""
    assert a.entity_keys == b.entity_keys
    assert a.entity_texts == b.entity_texts
    assert [x.id for x in a.atoms] == [x.id for x in b.atoms]
    assert set(a.edges) == set(b.edges)
    for name in a.edges:
        ea, eb = edge_map(a.edges[name]), edge_map(b.edges[name])
        assert ea.keys() == eb.keys(), f"{name} edges differ: {sorted(set(ea) ^ set(eb))[:10]}"
        assert all(abs(ea[k] - eb[k]) <= TOL for k in ea), f"{name} edge weights differ"
    assert torch.allclose(a.adjacency.to_dense(), b.adjacency.to_dense(), atol=TOL)
    assert torch.allclose(a.atom_embeddings, b.atom_embeddings, atol=TOL)
    assert torch.allclose(a.entity_embeddings, b.entity_embeddings, atol=TOL)


def assert_same_results(a: AtomicRAG, b: AtomicRAG, questions: list[str] = QUESTIONS) -> None:
    """Top atoms in the same order with scores within TOL, for every question."""
    ra, rb = a.query(questions), b.query(questions)
    for x, y in zip(ra, rb):
        assert [i.atom_id for i in x.items] == [i.atom_id for i in y.items], x.query
        for i, j in zip(x.items, y.items):
            assert abs(i.score - j.score) <= TOL
        assert x.entities_extracted == y.entities_extracted
