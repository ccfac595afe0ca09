"""Incremental Atom-Entity Graph updates: insert and delete documents without a full rebuild.

``update_graph(prev, atoms, triples, embedder, cfg, fidelity)`` returns the graph that
``build_graph`` would build from the same atoms and triples, reusing what ``prev`` already has:

- node order and the containment/relevance edges are recomputed with the functions of
  ``edges.py`` (pure Python loops over the mentions, cheap next to embedding), so both are
  *exactly* those of a fresh build, including the first-seen entity order and surface forms;
- atom and entity embeddings are reused by text and only unseen texts are encoded;
- synonym edges: the fresh build keeps, for every candidate entity (one with at least
  ``synonym_min_alnum`` alphanumeric characters), its top-``synonym_max_neighbors`` neighbours
  with cosine >= ``synonym_threshold`` ("rows"), and takes the union of the rows, weight = the
  larger cosine of the two directions. We keep those directed rows (``SynonymRows``) and update
  only rows that can change:
    * a new entity's row is computed against all candidates (new x all similarity);
    * an old row receives the new entities whose cosine passes the threshold and is cut back to
      the cap; the top-``cap`` of (old top-``cap`` + new) equals the top-``cap`` of everything;
    * an old row that lost a neighbour (its entity was deleted, or its surface form changed)
      is recomputed against all candidates only when it was full (``cap`` entries): then a
      neighbour beyond the cap may move in; below the cap it already held every neighbour
      above the threshold, so dropping the lost one is exact.
  Entity identity is (canonical key, surface text): when a delete or insert changes the first-seen
  surface form of a key, its embedding changes, so the entity is treated as deleted + added.

Exactness: edge sets and node order equal the fresh build; cosines may differ in the last bits
(a matmul of other shape), and ties at the cap or exactly at the threshold may resolve
differently, as they could between two fresh builds on different hardware.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from ..config import FidelityConfig, GraphConfig
from ..progress import reporting
from ..schemas import Atom, Triple
from .build import GRAPH_FIDELITY_FIELDS, encode
from .canon import alnum_count
from .edges import adjacency, containment_edges, drop_pairs, entity_nodes, relevance_edges
from .structure import AtomEntityGraph, EdgeList
from .synonyms import _MAX_BLOCK_ELEMENTS, resolve_device

Progress = Callable[[str, int, int], None]


@dataclass
class SynonymRows:
    """Directed synonym rows: ``dst`` is among the kept neighbours of ``src`` (entity node ids)."""

    src: torch.Tensor  # [M] int64
    dst: torch.Tensor  # [M] int64
    weight: torch.Tensor  # [M] float32 cosine

    @classmethod
    def empty(cls) -> SynonymRows:
        z = torch.zeros(0, dtype=torch.int64)
        return cls(z, z.clone(), torch.zeros(0, dtype=torch.float32))

    def __len__(self) -> int:
        return int(self.src.numel())

    def to_tensors(self) -> dict[str, torch.Tensor]:
        return {"syn_rows_src": self.src.contiguous(), "syn_rows_dst": self.dst.contiguous(),
                "syn_rows_weight": self.weight.contiguous()}

    @classmethod
    def from_tensors(cls, t: dict[str, torch.Tensor]) -> SynonymRows:
        return cls(t["syn_rows_src"].long(), t["syn_rows_dst"].long(), t["syn_rows_weight"].float())


@dataclass
class IndexedGraph:
    """A graph plus what incremental updates need. ``rows=None``: unknown (e.g. the graph came
    from a store that does not keep them); the next update recomputes them over all entities."""

    graph: AtomEntityGraph
    rows: SynonymRows | None


def rows_to_edges(rows: SynonymRows, num_entities: int) -> EdgeList:
    """Undirected synonym EdgeList from directed rows, exactly as ``synonyms.synonym_edges`` merges."""
    if len(rows) == 0:
        return EdgeList.empty()
    lo, hi = torch.minimum(rows.src, rows.dst), torch.maximum(rows.src, rows.dst)
    n = num_entities
    uniq, inv = torch.unique(lo * n + hi, return_inverse=True)
    weight = torch.full((uniq.numel(),), -2.0, dtype=torch.float32).scatter_reduce(
        0, inv, rows.weight, reduce="amax")
    return EdgeList(uniq // n, uniq % n, weight)


def _cap_per_row(src: torch.Tensor, w: torch.Tensor, cap: int) -> torch.Tensor:
    """Mask keeping, per ``src``, its ``cap`` largest weights."""
    if src.numel() == 0:
        return torch.zeros(0, dtype=torch.bool)
    order = torch.argsort(w, descending=True, stable=True)
    order = order[torch.argsort(src[order], stable=True)]  # grouped by src, weight-descending inside
    s = src[order]
    starts = torch.ones_like(s, dtype=torch.bool)
    starts[1:] = s[1:] != s[:-1]
    first = torch.cummax(torch.where(starts, torch.arange(s.numel()), 0), dim=0).values
    rank = torch.arange(s.numel()) - first
    keep = torch.zeros(src.numel(), dtype=torch.bool)
    keep[order[rank < cap]] = True
    return keep


def update_synonym_rows(prev: SynonymRows | None, old_to_new: torch.Tensor, keys: list[str],
                        emb: torch.Tensor, fresh: torch.Tensor, cfg: GraphConfig) -> tuple[SynonymRows, int]:
    """New directed rows after entities moved (``old_to_new[i]`` = new id of old entity i, -1 = gone).

    ``fresh[j]`` marks new entities (not the image of an old one). ``prev=None`` recomputes every
    row. Returns the rows and how many rows were computed against all candidates.
    """
    n = len(keys)
    cand = torch.tensor([i for i, k in enumerate(keys) if alnum_count(k) >= cfg.synonym_min_alnum],
                        dtype=torch.int64)
    c, cap = int(cand.numel()), cfg.synonym_max_neighbors
    if c < 2:
        return SynonymRows.empty(), 0
    recompute = torch.zeros(n, dtype=torch.bool)  # by entity node id
    if prev is None:
        recompute[:] = True
        kept = SynonymRows.empty()
    else:
        recompute |= fresh
        s, d = old_to_new[prev.src], old_to_new[prev.dst]
        row_len = torch.bincount(prev.src, minlength=old_to_new.numel())[prev.src]
        lost = (s >= 0) & (d < 0)
        recompute[s[lost & (row_len >= cap)]] = True  # a full row lost a neighbour: recompute it
        ok = (s >= 0) & (d >= 0)
        s, d, w = s[ok], d[ok], prev.weight[ok]
        ok = ~recompute[s]
        kept = SynonymRows(s[ok], d[ok], w[ok])
    is_cand = torch.zeros(n, dtype=torch.bool)
    is_cand[cand] = True
    recompute &= is_cand
    pos_rows = torch.nonzero(recompute[cand]).flatten()  # positions in cand of rows to compute
    if pos_rows.numel() == 0:
        return kept, 0
    dev = resolve_device(cfg.device)
    # the same normalisation and block shape as synonyms.synonym_edges, so a full recompute
    # gives bit-identical cosines
    x = torch.nn.functional.normalize(emb[cand].to(dev, torch.float32), dim=1)  # [C, d]
    k = min(cap, c - 1)
    block_rows = max(1, min(cfg.synonym_batch, _MAX_BLOCK_ELEMENTS // c))
    clean_cols = ~recompute[cand].to(dev)  # [C] columns whose rows are kept and may gain entries
    fresh_pos = fresh[cand].to(dev)  # [C]
    out_s, out_d, out_w, in_s, in_d, in_w = [], [], [], [], [], []
    for start in range(0, pos_rows.numel(), block_rows):
        rows = pos_rows[start:start + block_rows].to(dev)  # [b]
        sim = x[rows] @ x.T  # [b, d] @ [d, C] -> [b, C] cosine of each row entity to every candidate
        local = torch.arange(rows.numel(), device=dev)
        sim[local, rows] = -2.0  # no self loops
        vals, idx = torch.topk(sim, k, dim=1)  # [b, k]
        keep = vals >= cfg.synonym_threshold
        out_s.append(cand[rows.cpu()].unsqueeze(1).expand(-1, k)[keep.cpu()])
        out_d.append(cand[idx[keep].cpu()])
        out_w.append(vals[keep].float().cpu())
        # incoming: a new entity joins the rows of the kept (clean) entities it is similar to
        new_rows = fresh_pos[rows]
        if prev is not None and bool(new_rows.any()) and bool(clean_cols.any()):
            part = sim[new_rows][:, clean_cols]  # [b_new, C_clean]
            r, col = torch.nonzero(part >= cfg.synonym_threshold, as_tuple=True)
            clean_ids = cand[torch.nonzero(clean_cols.cpu()).flatten()]
            in_s.append(clean_ids[col.cpu()])
            in_d.append(cand[rows[new_rows][r].cpu()])
            in_w.append(part[r, col].float().cpu())
    if in_s:
        s = torch.cat([kept.src, *in_s])
        d = torch.cat([kept.dst, *in_d])
        w = torch.cat([kept.weight, *in_w])
        m = _cap_per_row(s, w, cap)
        kept = SynonymRows(s[m], d[m], w[m])
    rows_out = SynonymRows(torch.cat([kept.src, *out_s]), torch.cat([kept.dst, *out_d]),
                           torch.cat([kept.weight, *out_w]))
    return rows_out, int(pos_rows.numel())


def _embed_reusing(texts: list[str], prev_texts: list[str], prev_emb: torch.Tensor | None, embedder: Any,
                   what: str, progress: Progress | None) -> tuple[torch.Tensor, int]:
    """Embeddings of ``texts``: rows of ``prev_emb`` where the text was embedded before, else encoded."""
    if prev_emb is not None and prev_emb.shape[1] != embedder.dim:
        raise ValueError(f"embedder {embedder.name!r} has dim={embedder.dim} but the index holds "
                         f"{prev_emb.shape[1]}-dimensional {what} embeddings")
    row = {} if prev_emb is None else {t: i for i, t in enumerate(prev_texts)}
    missing = list(dict.fromkeys(t for t in texts if t not in row))
    with reporting(progress) if progress is not None else nullcontext():  # bars count encoded batches
        new = encode(embedder, missing, what)
    table = new if prev_emb is None else torch.cat([prev_emb, new])
    offset = 0 if prev_emb is None else prev_emb.shape[0]
    new_row = {t: offset + i for i, t in enumerate(missing)}
    idx = torch.tensor([row[t] if t in row else new_row[t] for t in texts], dtype=torch.int64)
    return table[idx].contiguous(), len(missing)


def update_graph(prev: IndexedGraph | None, atoms: list[Atom], triples: list[Triple], embedder: Any,
                 cfg: GraphConfig, fidelity: FidelityConfig, *, progress: Progress | None = None,
                 meta: dict[str, Any] | None = None) -> IndexedGraph:
    """The graph of ``atoms``/``triples`` (as ``build_graph`` builds it), reusing ``prev``'s work."""
    if not atoms:
        raise ValueError("cannot build a graph: zero atoms over all documents")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    ents = entity_nodes(atoms, triples, fidelity.entity_nodes)
    num_e, num_a = len(ents.keys), len(atoms)
    contain, dropped = containment_edges(atoms, ents, fidelity.containment_keys)
    relevance = relevance_edges(triples, ents, fidelity.relevance_weight)
    timings["structure_s"] = round(time.perf_counter() - t0, 3)

    g = prev.graph if prev is not None else None
    t0 = time.perf_counter()
    atom_emb, new_atoms = _embed_reusing([a.text for a in atoms], [a.text for a in g.atoms] if g else [],
                                         g.atom_embeddings if g else None, embedder, "atom", progress)
    ent_emb, new_ents = _embed_reusing(ents.texts, g.entity_texts if g else [],
                                       g.entity_embeddings if g else None, embedder, "entity", progress)
    timings["embed_s"] = round(time.perf_counter() - t0, 3)

    t0 = time.perf_counter()
    if g is None or prev is None or prev.rows is None:
        rows, computed = update_synonym_rows(None, torch.zeros(0, dtype=torch.int64), ents.keys, ent_emb,
                                             torch.ones(num_e, dtype=torch.bool), cfg)
    else:
        ident = {(k, t): j for j, (k, t) in enumerate(zip(ents.keys, ents.texts))}
        old_to_new = torch.tensor([ident.get((k, t), -1) for k, t in zip(g.entity_keys, g.entity_texts)],
                                  dtype=torch.int64)
        fresh = torch.ones(num_e, dtype=torch.bool)
        fresh[old_to_new[old_to_new >= 0]] = False
        rows, computed = update_synonym_rows(prev.rows, old_to_new, ents.keys, ent_emb, fresh, cfg)
    if progress is not None:
        progress("synonyms", 1, 1)
    synonym = rows_to_edges(rows, num_e)
    timings["synonym_knn_s"] = round(time.perf_counter() - t0, 3)

    t0 = time.perf_counter()
    overwritten = 0
    if fidelity.synonym_overwrites_relevance:
        relevance, overwritten = drop_pairs(relevance, synonym, num_e + num_a)
    edges = {"containment": contain, "relevance": relevance, "synonym": synonym}
    adj = adjacency(list(edges.values()), num_e + num_a)
    timings["adjacency_s"] = round(time.perf_counter() - t0, 3)

    info: dict[str, Any] = {
        "containment_mentions_dropped": dropped,
        "relevance_overwritten_by_synonym": overwritten,
        "fidelity": {k: getattr(fidelity, k) for k in GRAPH_FIDELITY_FIELDS},
        "graph_cfg": {k: getattr(cfg, k) for k in ("synonym_threshold", "synonym_max_neighbors",
                                                   "synonym_min_alnum")},
        "timings": timings,
        "last_update": {"new_atom_texts": new_atoms, "new_entity_texts": new_ents, "synonym_rows_computed": computed,
                        "incremental": prev is not None},
        **(meta or {}),
    }
    graph = AtomEntityGraph(entity_keys=ents.keys, entity_texts=ents.texts, atoms=atoms, edges=edges,
                            adjacency=adj, atom_embeddings=atom_emb, entity_embeddings=ent_emb,
                            embedder_name=embedder.name, meta=info)
    return IndexedGraph(graph, rows)
