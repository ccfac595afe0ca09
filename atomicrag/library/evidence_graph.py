"""The part of the index graph behind one answer, as plain data for a drawing (the server's page).

Retrieval seeds the graph at the entities the question names, spreads over entity-entity edges
(synonym, relevance) and atom-entity containment edges, and ranks atoms. The sub-graph shown is
what connects those two ends: the result's atoms, the entities they contain, the question's
entities found in the graph, and every graph edge among those nodes, each with its type and weight.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class _NodeIndex:
    """atom id -> node and entity key -> node of one graph (built once per graph object)."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        e = graph.num_entities
        self.atom = {a.id: e + i for i, a in enumerate(graph.atoms)}
        self.entity = {k: i for i, k in enumerate(graph.entity_keys)}


_cache: list[_NodeIndex] = []  # the last graph's index (an insert or delete makes a new graph)


def _index(graph: Any) -> _NodeIndex:
    if not _cache or _cache[0].graph is not graph:
        _cache[:] = [_NodeIndex(graph)]
    return _cache[0]


def evidence_subgraph(graph: Any, atom_ids: Sequence[str], query_entities: Sequence[str], *,
                      max_entities: int = 40) -> dict[str, Any]:
    """``{"nodes": [...], "edges": [...]}`` linking ``query_entities`` to the atoms ``atom_ids``
    (best first). Nodes: ``{"id", "kind": "atom"|"entity", "label", "seed", "rank", "doc"}``;
    edges: ``{"source", "target", "type", "weight"}``. Entities beyond ``max_entities`` (the ones
    fewest of the shown atoms contain, question entities kept first) are left out."""
    import torch

    from atomicrag.engine.api import canonical_key

    if graph is None:
        return {"nodes": [], "edges": []}
    idx = _index(graph)
    atoms = [idx.atom[a] for a in dict.fromkeys(atom_ids) if a in idx.atom]
    seeds = [idx.entity[k] for k in dict.fromkeys(canonical_key(q) for q in query_entities) if k in idx.entity]
    atom_t = torch.tensor(atoms, dtype=torch.int64)
    cont = graph.edges.get("containment")
    counts: dict[int, int] = {}
    if cont is not None and len(cont) and atoms:
        # containment pairs are (entity, atom): entities are numbered before atoms and src < dst
        hit = torch.isin(cont.dst, atom_t)
        for e in cont.src[hit].tolist():
            counts[e] = counts.get(e, 0) + 1
    ranked = sorted(counts, key=lambda e: (-counts[e], e))
    entities = list(dict.fromkeys([*seeds, *ranked]))[:max_entities]
    nodes_t = torch.tensor(sorted([*entities, *atoms]), dtype=torch.int64)
    edges: list[dict[str, Any]] = []
    for kind, el in graph.edges.items():
        if not len(el):
            continue
        keep = torch.isin(el.src, nodes_t) & torch.isin(el.dst, nodes_t)
        for s, d, w in zip(el.src[keep].tolist(), el.dst[keep].tolist(), el.weight[keep].tolist()):
            edges.append({"source": _nid(graph, s), "target": _nid(graph, d), "type": kind, "weight": round(w, 4)})
    seed_set = set(seeds)
    nodes = [{"id": _nid(graph, e), "kind": "entity", "label": graph.entity_texts[e], "seed": e in seed_set,
              "rank": None, "doc": None} for e in entities]
    e_count = graph.num_entities
    for rank, n in enumerate(atoms, 1):
        atom = graph.atoms[n - e_count]
        nodes.append({"id": _nid(graph, n), "kind": "atom", "label": atom.text, "seed": False, "rank": rank,
                      "doc": atom.passage_id})
    return {"nodes": nodes, "edges": edges}


def _nid(graph: Any, node: int) -> str:
    e = graph.num_entities
    return f"e{node}" if node < e else f"a:{graph.atoms[node - e].id}"
