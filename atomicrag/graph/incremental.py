"""What makes Atom-Entity Graph updates incremental: the index's directed synonym rows.

``graph.build.update_graph(prev, atoms, triples, embedder, cfg)`` assembles the graph of
the atoms and triples reusing what ``prev`` already has (a fresh build is ``prev=None``):

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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

from atomicrag.graph.canon import alnum_count
from atomicrag.graph.structure import AtomEntityGraph, EdgeList

if TYPE_CHECKING:  # only torch at import time: the GPU check runs the KNN without omegaconf
    from atomicrag.core.config import GraphConfig

# Cap on the [rows, candidates] similarity block, in elements (256 MB of float32 on CPU),
# whatever synonym_batch says: the block is the only large temporary of the KNN.
_MAX_BLOCK_ELEMENTS = 64 * 1024 * 1024


class SynonymSettings(Protocol):
    """The fields of ``GraphConfig`` the KNN reads (a protocol, so the KNN imports with torch alone:
    the GPU check runs it on a machine without omegaconf; ``synonyms.synonym_edges``)."""

    synonym_threshold: float
    synonym_max_neighbors: int
    synonym_min_alnum: int
    synonym_batch: int
    device: str


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


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


def synonym_candidates(keys: list[str], min_alnum: int, mode: str = "both_ends") -> tuple[list[int], list[bool]]:
    """(entities that may be a neighbour, whether each of them has a row of its own).

    both_ends: both need ``min_alnum`` alphanumerics. source_only (released): only the entity
    whose neighbours are searched does; any entity with a non-empty key may be its neighbour.
    """
    if mode not in ("both_ends", "source_only"):
        raise ValueError(f"synonym candidates mode {mode!r} is not 'both_ends' or 'source_only'")
    long = [alnum_count(k) >= min_alnum for k in keys]
    cols = [i for i, k in enumerate(keys) if (long[i] if mode == "both_ends" else bool(k.strip()))]
    return cols, [long[i] for i in cols]


def update_synonym_rows(prev: SynonymRows | None, old_to_new: torch.Tensor, keys: list[str],
                        emb: torch.Tensor, fresh: torch.Tensor, cfg: GraphConfig | SynonymSettings,
                        candidates: str = "both_ends") -> tuple[SynonymRows, int]:
    """New directed rows after entities moved (``old_to_new[i]`` = new id of old entity i, -1 = gone).

    ``fresh[j]`` marks new entities (not the image of an old one). ``prev=None`` recomputes every
    row. ``candidates``: which entities have rows and which may be neighbours
    (``synonym_candidates``; graph.synonym_candidates). Returns the rows and how many rows were
    computed against all candidates.
    """
    n = len(keys)
    cols, has_row = synonym_candidates(keys, cfg.synonym_min_alnum, candidates)
    cand = torch.tensor(cols, dtype=torch.int64)
    c, cap = int(cand.numel()), cfg.synonym_max_neighbors
    if c < 2 or not any(has_row):
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
    has_row_pos = torch.tensor(has_row, dtype=torch.bool)  # [C] whether a candidate has a row
    is_row = torch.zeros(n, dtype=torch.bool)
    is_row[cand[has_row_pos]] = True
    recompute &= is_row
    # rows to compute, plus new entities without a row of their own (source_only): they are only
    # neighbours, but a new one must still join the kept rows it is similar to
    joining = (fresh[cand] & ~has_row_pos) if prev is not None else torch.zeros(c, dtype=torch.bool)
    pos_rows = torch.nonzero(recompute[cand] | joining).flatten()  # positions in cand
    computed = int(recompute[cand].sum())
    if pos_rows.numel() == 0:
        return kept, 0
    dev = resolve_device(cfg.device)
    # the one synonym KNN: a full build is this with every row recomputed (prev=None)
    x = torch.nn.functional.normalize(emb[cand].to(dev, torch.float32), dim=1)  # [C, d]
    k = min(cap, c - 1)
    block_rows = max(1, min(cfg.synonym_batch, _MAX_BLOCK_ELEMENTS // c))
    clean_cols = (~recompute[cand] & has_row_pos).to(dev)  # [C] columns whose rows are kept and may gain entries
    fresh_pos = fresh[cand].to(dev)  # [C]
    own_row = has_row_pos.to(dev)  # [C]
    out_s, out_d, out_w, in_s, in_d, in_w = [], [], [], [], [], []
    for start in range(0, pos_rows.numel(), block_rows):
        rows = pos_rows[start:start + block_rows].to(dev)  # [b]
        sim = x[rows] @ x.T  # [b, d] @ [d, C] -> [b, C] cosine of each row entity to every candidate
        local = torch.arange(rows.numel(), device=dev)
        sim[local, rows] = -2.0  # no self loops
        vals, idx = torch.topk(sim, k, dim=1)  # [b, k]
        keep = (vals >= cfg.synonym_threshold) & own_row[rows].unsqueeze(1)  # [b, k]; rows of their own only
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
    return rows_out, computed
