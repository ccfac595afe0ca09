"""Passages beside atoms and entities: passage nodes in the PPR and passage ranking from scores.

HippoRAG 2 puts passages into its graph and seeds them by dense passage similarity, so dense and
graph evidence meet inside one propagation. Here passage nodes are a *query-time* construct over
the stored graph: a passage node per distinct ``atom.passage_id``, joined to each of its atoms by
an edge of weight ``retriever.passage_edge_weight``, appended after the atom nodes
(node order: entities ``0..E-1``, atoms ``E..E+A-1``, passages ``E+A..E+A+P-1``). Nothing new is
stored, so insert/delete of documents (graph/incremental.py) needs no change: the layer is
rebuilt from the updated graph when a query engine is made.

A passage's vector is the L2-normalised mean of its atoms' embeddings (its "centroid"); the
dense passage score of a query is ``max(cos(q, centroid), max over its atoms cos(q, atom))``
so that one exactly matching sentence is not averaged away.

Passage ranking (``retriever.passage_ranking``):
- ``best_atom``: a passage ranks by its best atom among the query's top-k (the paper's view);
- ``atom_sum``: by the summed propagation score of all its atoms;
- ``node``: by its passage node's propagation score (needs ``passage_nodes``);
- ``fusion``: ``graph + fusion_dense_weight * dense + fusion_lexical_weight * bm25``, where graph
  is the passage node score (or the atom sum without nodes) divided by the query's best, dense is
  the passage cosine above and bm25 the passage's best atom BM25 divided by the query's best;
- ``bridge``: ``max(best atom / query's best atom, bridge_weight * bridge)``. A passage's
  *subject* is the entity node linked to the most of its atoms (at least half of them; ties: the
  entity mentioned first, i.e. the title entity under ``atomizer.title_context``); its bridge score
  is the best score, divided by the query's best, of an atom of *another* passage that links that
  subject. A multi-hop question's second passage is about the bridge entity that a first-hop atom
  names ("Blood Street is a 1988 film co-directed by Leo Fong" -> the passage "Leo Fong"), but
  the walk gives each of that passage's own atoms only a small share of the mass (2Wiki DEV: the
  first hop ranked 1, the bridge passage often not in the top 25 by best atom).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from atomicrag.graph.structure import AtomEntityGraph


@dataclass
class PassageLayer:
    passage_ids: list[str]  # P, in order of first appearance among the atoms
    atom_passage: torch.Tensor  # [A] int64: passage index of each atom
    centroids: torch.Tensor  # [P, d] float32, L2-normalised mean of each passage's atom embeddings
    adjacency: torch.Tensor | None = None  # CSR [N+P, N+P] with passage-atom edges; None without nodes
    subject: torch.Tensor | None = None  # [P] int64 entity index of each passage's subject, -1 if none
    mention_atom: torch.Tensor | None = None  # [M] atoms that link another passage's subject
    mention_passage: torch.Tensor | None = None  # [M] the passage whose subject the atom links
    _mention_ptr: torch.Tensor | None = None  # [A+1] CSR pointers of the mentions by atom (lazy)
    _mention_targets: torch.Tensor | None = None  # [M] their passages in atom order

    @property
    def num_passages(self) -> int:
        return len(self.passage_ids)


def build_passage_layer(graph: AtomEntityGraph, edge_weight: float, with_nodes: bool) -> PassageLayer:
    """The passage layer of ``graph`` (see the module docstring)."""
    if graph.atom_embeddings is None:
        raise ValueError("passage ranking needs atom embeddings: build the graph with an embedder")
    index: dict[str, int] = {}
    owner = [index.setdefault(a.passage_id, len(index)) for a in graph.atoms]
    atom_passage = torch.tensor(owner, dtype=torch.int64)  # [A]
    p, d = len(index), graph.atom_embeddings.shape[1]
    sums = torch.zeros(p, d).index_add_(0, atom_passage, graph.atom_embeddings)  # [P, d]
    centroids = torch.nn.functional.normalize(sums, dim=1)
    adj = None
    if with_nodes:
        if edge_weight <= 0:
            raise ValueError(f"retriever.passage_edge_weight must be > 0, got {edge_weight}")
        n, e = graph.num_nodes, graph.num_entities
        base = graph.adjacency.to_sparse_coo().coalesce()
        atoms = torch.arange(graph.num_atoms) + e  # [A] atom node ids
        pnodes = atom_passage + n  # [A] passage node id of each atom
        rows = torch.cat([base.indices()[0], atoms, pnodes])
        cols = torch.cat([base.indices()[1], pnodes, atoms])
        vals = torch.cat([base.values().float(), torch.full((2 * graph.num_atoms,), float(edge_weight))])
        adj = torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (n + p, n + p)).coalesce().to_sparse_csr()
    subject = passage_subjects(graph, atom_passage, p)
    m_atom, m_passage = subject_mentions(graph, atom_passage, subject)
    return PassageLayer(list(index), atom_passage, centroids, adj, subject, m_atom, m_passage)


def passage_subjects(graph: AtomEntityGraph, atom_passage: torch.Tensor, num_passages: int) -> torch.Tensor:
    """``[P]`` entity index of each passage's subject: the entity linked to the most of its atoms,
    if that is at least half of them, else -1. Ties go to the entity mentioned first (containment
    edges are in atom order, then mention order), which under title_context is the title."""
    cont = graph.edges["containment"]
    e = graph.num_entities
    ent, atom = cont.src, cont.dst - e  # [M] containment pairs (entity node, atom node)
    m = ent.numel()
    if m == 0 or num_passages == 0:
        return torch.full((num_passages,), -1, dtype=torch.int64)
    key = atom_passage[atom] * e + ent  # [M] one id per (passage, entity)
    uniq, inv, count = torch.unique(key, return_inverse=True, return_counts=True)  # [U]
    first = torch.full((uniq.numel(),), m, dtype=torch.int64).scatter_reduce(0, inv, torch.arange(m), "amin")
    u_pas, u_ent = uniq // e, uniq % e
    rank = count * (m + 1) + (m - first)  # [U] more atoms first, then the earlier first mention
    best = torch.zeros(num_passages, dtype=torch.int64).scatter_reduce(0, u_pas, rank, "amax")  # [P]
    winner = rank == best[u_pas]  # exactly one per passage: ranks of one passage are distinct
    subject = torch.full((num_passages,), -1, dtype=torch.int64)
    subject[u_pas[winner]] = u_ent[winner]
    atoms_per_passage = torch.bincount(atom_passage, minlength=num_passages)  # [P]
    return torch.where((best // (m + 1)) * 2 >= atoms_per_passage, subject, torch.full_like(subject, -1))


def subject_mentions(graph: AtomEntityGraph, atom_passage: torch.Tensor,
                     subject: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(atoms [M], passages [M])``: each atom that links the subject of a passage other than its
    own, with that passage (an entity that is the subject of several passages points to the first)."""
    cont = graph.edges["containment"]
    e = graph.num_entities
    ent, atom = cont.src, cont.dst - e  # [M]
    owner = torch.full((e,), -1, dtype=torch.int64)  # [E] passage whose subject each entity is
    has = torch.nonzero(subject >= 0).flatten()
    owner[subject[has].flip(0)] = has.flip(0)  # flipped: the first passage wins the duplicate writes
    target = owner[ent]  # [M]
    ok = (target >= 0) & (target != atom_passage[atom])
    return atom[ok], target[ok]


def bridge_topk(layer: PassageLayer, vals: torch.Tensor, idx: torch.Tensor, weight: float,
                depth: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The bridge ranking from each query's top-k atoms only: ``(scores [b, depth], passages
    [b, depth])``, padded with -inf / -1. Sparse: memory grows with the top-k atoms and their
    mentions, not with the corpus (a dense ``[b, A]`` or ``[b, P]`` would not fit a large index).

    ``vals``/``idx`` ``[b, k]``: top-k atom scores and indices. A passage scores its best top-k
    atom, or ``weight`` x a top-k atom of another passage that names its subject (both divided
    by the query's best atom); passages reached by neither are not ranked.
    """
    if layer.mention_atom is None or layer.mention_passage is None:
        raise ValueError("passage_ranking=bridge needs the passage layer's subject mentions")
    if layer._mention_ptr is None:  # mentions grouped by atom, once per layer
        order = torch.argsort(layer.mention_atom, stable=True)
        a = layer.atom_passage.numel()
        counts = torch.bincount(layer.mention_atom, minlength=a)  # [A]
        layer._mention_ptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])  # [A+1]
        layer._mention_targets = layer.mention_passage[order]  # [M]
    b, k = idx.shape
    p = layer.num_passages
    v = vals.float().clamp_min(1e-30)
    norm = (v / v.max(dim=1, keepdim=True).values).reshape(-1)  # [b*k] in (0, 1]
    flat = idx.reshape(-1)  # [b*k]
    row = torch.arange(b).repeat_interleave(k)  # [b*k]
    ptr, targets = layer._mention_ptr, layer._mention_targets
    deg = ptr[flat + 1] - ptr[flat]  # [b*k] mentions of each top-k atom
    total = int(deg.sum())
    first = ptr[flat].repeat_interleave(deg)  # [T]
    offset = torch.arange(total) - (deg.cumsum(0) - deg).repeat_interleave(deg)  # [T] position in its run
    keys = torch.cat([row * p + layer.atom_passage[flat],  # own passages
                      row.repeat_interleave(deg) * p + targets[first + offset]])  # bridged passages
    scores = torch.cat([norm, weight * norm.repeat_interleave(deg)])
    uniq, inv = torch.unique(keys, return_inverse=True)  # one slot per (query, passage)
    best = torch.full((uniq.numel(),), float("-inf")).scatter_reduce(0, inv, scores, "amax")  # [U]
    urow, upas = uniq // p, uniq % p
    order = torch.argsort(best, descending=True, stable=True)
    order = order[torch.argsort(urow[order], stable=True)]  # by query, then score descending
    urow, upas, best = urow[order], upas[order], best[order]
    counts = torch.bincount(urow, minlength=b)
    rank = torch.arange(urow.numel()) - (counts.cumsum(0) - counts)[urow]  # rank within its query
    keep = rank < depth
    out_s = torch.full((b, depth), float("-inf"))
    out_p = torch.full((b, depth), -1, dtype=torch.int64)
    out_s[urow[keep], rank[keep]] = best[keep]
    out_p[urow[keep], rank[keep]] = upas[keep]
    return out_s, out_p


def per_passage(atom_values: torch.Tensor, layer: PassageLayer, reduce: str) -> torch.Tensor:
    """Atom values ``[Q, A]`` pooled per passage ``[Q, P]`` by ``reduce`` ("amax" or "sum")."""
    q = atom_values.shape[0]
    idx = layer.atom_passage.unsqueeze(0).expand(q, -1)  # [Q, A]
    init = torch.full((q, layer.num_passages), float("-inf") if reduce == "amax" else 0.0)
    return init.scatter_reduce(1, idx, atom_values, reduce=reduce, include_self=reduce != "amax")  # [Q, P]


def dense_passage_scores(q_emb: torch.Tensor, atom_sim: torch.Tensor, layer: PassageLayer) -> torch.Tensor:
    """``[Q, P]``: max of the query's cosine to the passage centroid and to its best atom."""
    centroid = q_emb @ layer.centroids.T  # [Q, d] @ [d, P] -> [Q, P]
    return torch.maximum(centroid, per_passage(atom_sim, layer, "amax"))


def passage_seeds(dense: torch.Tensor, weight: float, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeds of the passage nodes: the ``top_k`` passages by dense score, ``weight * cosine``.

    Returns (indices [2, M] over (query, passage index), values [M]).
    """
    q, p = dense.shape
    k = min(top_k, p)
    if k == 0 or weight <= 0:
        return torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0)
    vals, idx = dense.topk(k, dim=1)  # [Q, k]
    rows = torch.arange(q).repeat_interleave(k)
    return torch.stack([rows, idx.reshape(-1)]), (weight * vals.clamp_min(0)).reshape(-1).float()


def rank_passages(
    mode: str,
    layer: PassageLayer,
    *,
    atom_scores: torch.Tensor,  # [Q, A] propagation scores of every atom
    passage_scores: torch.Tensor | None,  # [Q, P] passage node scores, or None without nodes
    dense: torch.Tensor,  # [Q, P] dense passage scores
    lexical: torch.Tensor | None,  # [Q, P] BM25 passage scores (max-normalised), or None
    dense_weight: float,
    lexical_weight: float,
    bridge_weight: float = 1.0,
) -> torch.Tensor:
    """Relevance of every passage ``[Q, P]`` (higher is better) under ranking ``mode``."""
    if mode == "atom_sum":
        return per_passage(atom_scores, layer, "sum")
    if mode == "node":
        if passage_scores is None:
            raise ValueError("retriever.passage_ranking=node needs retriever.passage_nodes=true")
        return passage_scores
    if mode == "fusion":
        graph = passage_scores if passage_scores is not None else per_passage(atom_scores, layer, "sum")
        out = graph / graph.max(dim=1, keepdim=True).values.clamp_min(1e-30)  # [Q, P] in [0, 1]
        out = out + dense_weight * dense
        if lexical is not None and lexical_weight > 0:
            out = out + lexical_weight * lexical
        return out
    if mode == "bridge":
        if layer.mention_atom is None or layer.mention_passage is None:
            raise ValueError("passage_ranking=bridge needs the passage layer's subject mentions")
        q = atom_scores.shape[0]
        norm = atom_scores / atom_scores.max(dim=1, keepdim=True).values.clamp_min(1e-30)  # [Q, A]
        own = per_passage(norm, layer, "amax")  # [Q, P]
        idx = layer.mention_passage.unsqueeze(0).expand(q, -1)  # [Q, M]
        bridge = torch.zeros_like(own).scatter_reduce(1, idx, norm[:, layer.mention_atom], "amax")  # [Q, P]
        return torch.maximum(own, bridge_weight * bridge)
    raise ValueError(f"unknown passage ranking {mode!r} (best_atom is ranked from the top-k atoms)")
