"""Entity nodes, containment and relevance edges, and the combined adjacency.

Node ids: entities ``0 .. E-1`` then atoms ``E .. E+A-1`` (see structure.py). Every edge list
holds each undirected pair once with ``src < dst``; the adjacency holds both directions.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import torch

from atomicrag.core.schemas import Atom, Triple
from atomicrag.graph.canon import ascii_key, canonical_key
from atomicrag.graph.structure import EdgeList


@dataclass
class EntityTable:
    keys: list[str]  # canonical key per entity node
    texts: list[str]  # first-seen surface form per entity node
    index: dict[str, int]  # key -> node id


def entity_nodes(atoms: list[Atom], triples: list[Triple], mode: str,
                 key_of: Callable[[str], str] = canonical_key) -> EntityTable:
    """The entity nodes, in first-seen order.

    ``all``: every entity of every atom plus triple subjects/objects (the paper's E_i).
    ``triples_only``: only triple subjects/objects (the released code).
    ``key_of``: the entity key (``canonical_key``; ``ascii_key`` as released, under which the empty
    key of every name without an ASCII letter or digit is one node, as in the released graph).
    """
    keys: list[str] = []
    texts: list[str] = []
    index: dict[str, int] = {}
    empty_is_a_node = key_of is ascii_key

    def add(surface: str) -> None:
        key = key_of(surface)
        if (key or empty_is_a_node) and key not in index:
            index[key] = len(keys)
            keys.append(key)
            texts.append(surface.strip())

    for t in triples:
        add(t.subject)
        add(t.object)
    if mode == "all":
        for a in atoms:
            for e in a.entities:
                add(e)
    elif mode != "triples_only":
        raise ValueError(f"entity_nodes={mode!r} is not 'all' or 'triples_only'")
    return EntityTable(keys, texts, index)


def containment_edges(atoms: list[Atom], ents: EntityTable, keys_mode: str,
                      key_of: Callable[[str], str] = canonical_key) -> tuple[EdgeList, int]:
    """Atom-entity edges of weight 1, and the number of atom entity mentions that found no node
    (under ``canonical`` with all entity nodes, only mentions without any letter or digit).

    ``canonical``: a mention links to the node of its canonical key.
    ``raw``: the released code's bug: the mention string itself is looked up among canonical
    keys, so only mentions that are already lower-case/space-normalised link.
    """
    if keys_mode not in ("canonical", "raw"):
        raise ValueError(f"containment_keys={keys_mode!r} is not 'canonical' or 'raw'")
    num_e = len(ents.keys)
    src: list[int] = []
    dst: list[int] = []
    dropped = 0
    for i, atom in enumerate(atoms):
        linked: set[int] = set()
        for mention in atom.entities:
            key = key_of(mention) if keys_mode == "canonical" else mention
            node = ents.index.get(key)
            if node is None:
                dropped += 1
            elif node not in linked:
                linked.add(node)
                src.append(node)
                dst.append(num_e + i)
    n = len(src)
    return EdgeList(torch.tensor(src, dtype=torch.int64), torch.tensor(dst, dtype=torch.int64),
                    torch.ones(n, dtype=torch.float32)), dropped


def relevance_edges(triples: list[Triple], ents: EntityTable, weight_mode: str,
                    key_of: Callable[[str], str] = canonical_key) -> EdgeList:
    """Entity-entity edges from triples.

    ``distinct_relations`` (paper Eq. 2): weight = number of distinct relation labels between
    the pair (labels compared by canonical form, in either direction).
    ``occurrences`` (released code): weight = number of triples linking the pair.
    Self-pairs (subject == object after canonicalisation) are skipped.
    """
    if weight_mode not in ("distinct_relations", "occurrences"):
        raise ValueError(f"relevance_weight={weight_mode!r} is not 'distinct_relations' or 'occurrences'")
    labels: dict[tuple[int, int], set[str]] = defaultdict(set)
    count: dict[tuple[int, int], int] = defaultdict(int)
    for t in triples:
        a = ents.index.get(key_of(t.subject))
        b = ents.index.get(key_of(t.object))
        if a is None or b is None or a == b:
            continue
        pair = (a, b) if a < b else (b, a)
        labels[pair].add(canonical_key(t.predicate))
        count[pair] += 1
    pairs = sorted(count)
    if weight_mode == "distinct_relations":
        w = [float(len(labels[p])) for p in pairs]
    else:
        w = [float(count[p]) for p in pairs]
    return EdgeList(torch.tensor([p[0] for p in pairs], dtype=torch.int64),
                    torch.tensor([p[1] for p in pairs], dtype=torch.int64),
                    torch.tensor(w, dtype=torch.float32))


def drop_pairs(edges: EdgeList, other: EdgeList, num_nodes: int) -> tuple[EdgeList, int]:
    """``edges`` without the pairs that also occur in ``other`` (synonym overwrites relevance)."""
    if len(edges) == 0 or len(other) == 0:
        return edges, 0
    key = edges.src * num_nodes + edges.dst
    okey = other.src * num_nodes + other.dst
    keep = ~torch.isin(key, okey)
    return EdgeList(edges.src[keep], edges.dst[keep], edges.weight[keep]), int((~keep).sum())


def adjacency(edge_lists: list[EdgeList], num_nodes: int) -> torch.Tensor:
    """Symmetric sparse CSR [N, N] float32: both directions of every edge, weights summed per pair."""
    src = torch.cat([e.src for e in edge_lists] + [torch.zeros(0, dtype=torch.int64)])
    dst = torch.cat([e.dst for e in edge_lists] + [torch.zeros(0, dtype=torch.int64)])
    w = torch.cat([e.weight for e in edge_lists] + [torch.zeros(0, dtype=torch.float32)])
    rows = torch.cat([src, dst])
    cols = torch.cat([dst, src])
    vals = torch.cat([w, w]).to(torch.float32)
    coo = torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (num_nodes, num_nodes),
                                  check_invariants=False).coalesce()  # indices are in range by construction
    with warnings.catch_warnings():  # "sparse CSR support is in beta": noise for every graph
        warnings.simplefilter("ignore", UserWarning)
        return coo.to_sparse_csr()
