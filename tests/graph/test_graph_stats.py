"""graph_stats against hand computation (and networkx when it is installed)."""
from __future__ import annotations

import random

import pytest
import torch

from atomicrag.core.schemas import Atom
from atomicrag.graph.edges import adjacency
from atomicrag.graph.stats import graph_stats, stats_markdown
from atomicrag.graph.structure import AtomEntityGraph, EdgeList


def el(pairs: list[tuple[int, int]], w: float = 1.0) -> EdgeList:
    return EdgeList(torch.tensor([p[0] for p in pairs], dtype=torch.int64),
                    torch.tensor([p[1] for p in pairs], dtype=torch.int64),
                    torch.full((len(pairs),), w, dtype=torch.float32))


def graph(num_e: int, num_a: int, edges: dict[str, EdgeList]) -> AtomEntityGraph:
    atoms = [Atom(id=f"a{i}", text=f"atom {i}", chunk_id="c", passage_id="p") for i in range(num_a)]
    return AtomEntityGraph(entity_keys=[f"e{i}" for i in range(num_e)], entity_texts=[f"e{i}" for i in range(num_e)],
                           atoms=atoms, edges=edges, adjacency=adjacency(list(edges.values()), num_e + num_a))


def test_hand_computed_stats():
    # entities 0,1,2 (triangle, pair 1-2 both relevance and synonym), atoms 3,4
    g = graph(3, 2, {"containment": el([(0, 3), (1, 3), (2, 4)]),
                     "relevance": el([(0, 1), (0, 2), (1, 2)]),
                     "synonym": el([(1, 2)], 0.9)})
    st = graph_stats(g)
    assert (st["nodes"], st["entities"], st["atoms"]) == (5, 3, 2)
    assert (st["containment_edges"], st["related_edges"], st["synonym_edges"], st["edges"]) == (3, 3, 1, 7)
    assert st["unique_pairs"] == 6
    assert st["avg_degree"] == pytest.approx(12 / 5)
    # triangles {0,1,2} and {0,1,3}: c = 2/3, 2/3, 1/3, 1, 0
    assert st["avg_clustering"] == pytest.approx((2 / 3 + 2 / 3 + 1 / 3 + 1 + 0) / 5)
    assert st["containment_per_atom"] == 1.5
    assert st["atoms_without_entities"] == 0 and st["isolated_entities"] == 0 and st["max_entity_degree"] == 3
    assert "| g |" in stats_markdown({"g": st})


def test_matches_networkx_on_a_random_graph():
    nx = pytest.importorskip("networkx")
    rng = random.Random(0)
    ne, na = 40, 60
    cont = sorted({(rng.randrange(ne), ne + rng.randrange(na)) for _ in range(150)})
    rel = sorted({tuple(sorted(rng.sample(range(ne), 2))) for _ in range(80)})
    syn = sorted({tuple(sorted(rng.sample(range(ne), 2))) for _ in range(40)})
    g = graph(ne, na, {"containment": el(cont), "relevance": el(rel), "synonym": el(syn)})
    st = graph_stats(g)
    G = nx.Graph()
    G.add_nodes_from(range(ne + na))
    G.add_edges_from(cont + rel + syn)
    assert st["unique_pairs"] == G.number_of_edges()
    assert st["avg_degree"] == pytest.approx(2 * G.number_of_edges() / G.number_of_nodes())
    assert st["avg_clustering"] == pytest.approx(nx.average_clustering(G))


def test_per_node_triangles_match_networkx_with_hubs_and_cliques():
    """Every node's triangle count and clustering, where degree order and index order disagree
    (hubs with low indices, cliques among equal degrees): the orientation must credit each
    triangle to all three of its nodes exactly once."""
    nx = pytest.importorskip("networkx")
    import numpy as np
    import scipy.sparse as sp

    from atomicrag.graph.stats import clustering, triangles

    rng = random.Random(1)
    G = nx.Graph()
    n = 300
    G.add_nodes_from(range(n))
    for hub in (0, 1, 2):  # hubs joined to most nodes: many triangles through the hub pairs
        G.add_edges_from((hub, v) for v in range(3, n) if rng.random() < 0.7)
    G.add_edges_from((u, v) for u in range(250, 262) for v in range(u + 1, 262))  # a 12-clique
    G.add_edges_from(tuple(rng.sample(range(3, n), 2)) for _ in range(400))
    edges = np.array(list(G.edges()))
    a = sp.coo_matrix((np.ones(2 * len(edges)), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])),
                      shape=(n, n)).tocsr()
    want = nx.triangles(G)
    assert triangles(a).tolist() == [float(want[v]) for v in range(n)]
    cc = nx.clustering(G)
    assert clustering(a) == pytest.approx([cc[v] for v in range(n)])
