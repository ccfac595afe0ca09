"""Seeds of the personalised propagation: entity seeds plus weighted atom seeds.

Per query (paper section 3.3):
- entity seeds: the query's entities (spaCy NER, or the LLM NER prompt) are embedded; every graph
  entity scores its max cosine to any query entity; those >= ``entity_sim_threshold`` are kept,
  at most ``entity_top_k``, weight = cosine;
- atom seeds: dense similarity of the query to every atom, times ``atom_seed_weight`` (alpha).
  ``retriever.atom_seeding == "topk"`` seeds only the ``atom_seed_top_k`` most similar atoms (the
  paper's "bias toward entities"); ``"all_minmax"`` seeds every atom with alpha times the
  min-max-normalised similarity, as the released code does (atoms then carry most of the mass).
All queries' seeds form one sparse personalisation matrix [Q, N] over the graph's node order.

Hybrid lexical seeding (``retriever.lexical_weight`` = w > 0, retrieve/lexical.py): entity linking
scores ``(1-w) cos + w bm25`` of each query entity against the entity names, and atom seeds use
``(1-w) cos + w bm25`` of the query against the atom texts, each BM25 divided by its row's best.
Passage nodes (retrieve/passage_nodes.py) get seeds in the columns after the atoms.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from atomicrag.core.config import RetrieverConfig
from atomicrag.graph.structure import AtomEntityGraph


@dataclass
class SeedSet:
    """Personalisation of a batch of queries."""

    matrix: torch.Tensor  # sparse COO [Q, N] float32, rows not normalised (the propagator does it)
    query_entities: list[list[str]] = field(default_factory=list)  # per query: its extracted entities
    entity_seeds: list[list[tuple[int, float]]] = field(default_factory=list)  # per query: (entity idx, w)
    atom_similarity: torch.Tensor | None = None  # [Q, A] cosine of each query to each atom

    def describe(self, q: int, graph: AtomEntityGraph, limit: int = 20) -> list[dict[str, Any]]:
        """Human-readable entity seeds of query ``q`` for the trace."""
        return [
            {"entity": graph.entity_texts[e], "weight": round(w, 4)}
            for e, w in self.entity_seeds[q][:limit]
        ]


def spacy_query_entities(nlp: Any, queries: Sequence[str]) -> list[list[str]]:
    """Named entities (and, as a fallback, noun chunks) of each query."""
    out: list[list[str]] = []
    for doc in nlp.pipe(list(queries), batch_size=64):
        ents = [e.text for e in doc.ents]
        if not ents and doc.has_annotation("DEP"):
            ents = [nc.text for nc in doc.noun_chunks]
        seen: dict[str, None] = {}
        for e in ents:
            seen.setdefault(e.strip(), None)
        out.append([e for e in seen if e])
    return out


def merge_names(first: list[str], second: list[str]) -> list[str]:
    """``first`` then the names of ``second`` not already in it (case-insensitive), in order."""
    seen = {x.casefold() for x in first}
    out = list(first)
    for x in second:
        if x.casefold() not in seen:
            seen.add(x.casefold())
            out.append(x)
    return out


def rare_entity_names(graph: AtomEntityGraph, max_df: float) -> list[str]:
    """Entity names occurring in at most ``max_df`` of the atoms (an IDF filter for query matching)."""
    src = graph.edges["containment"].src
    src = src[src < graph.num_entities]  # containment pairs are (entity, atom): entities come first
    df = torch.bincount(src, minlength=graph.num_entities)  # [E] atoms per entity
    cap = max(1.0, max_df * graph.num_atoms)
    return [t for t, d in zip(graph.entity_texts, df.tolist()) if d <= cap]


def link_entities(
    query_entities: list[list[str]],
    graph: AtomEntityGraph,
    encode: Callable[[list[str]], torch.Tensor],
    cfg: RetrieverConfig,
    lexical: Any = None,
    fallback: str = "none",
) -> list[list[tuple[int, float]]]:
    """For each query, graph entities whose max cosine to a query entity passes the threshold.

    ``fallback="best"`` (``retriever.entity_link_fallback`` under ``reference_code``): when no
    entity passes, the single best one is kept anyway, as the released code does."""
    if graph.entity_embeddings is None or graph.num_entities == 0:
        return [[] for _ in query_entities]
    flat = [e for ents in query_entities for e in ents]
    if not flat:
        return [[] for _ in query_entities]
    q_emb = encode(flat)  # [F, d], F = all query entities of the batch
    sims = q_emb @ graph.entity_embeddings.T  # [F, d] @ [d, E] -> [F, E]
    if lexical is not None and cfg.lexical_weight > 0:
        w = cfg.lexical_weight
        sims = (1 - w) * sims + w * lexical.entity_scores(flat)  # [F, E]
    out: list[list[tuple[int, float]]] = []
    start = 0
    for ents in query_entities:
        if not ents:
            out.append([])
            continue
        block = sims[start : start + len(ents)]  # [n_q, E]
        start += len(ents)
        best = block.max(dim=0).values  # [E]: each graph entity's max cosine to a query entity
        k = min(cfg.entity_top_k, best.numel())
        vals, idx = best.topk(k)
        keep = vals >= cfg.entity_sim_threshold
        if fallback == "best" and k > 0 and not bool(keep.any()):
            keep[0] = True  # topk is sorted: the best entity
        out.append([(int(i), float(v)) for i, v in zip(idx[keep], vals[keep])])
    return out


def atom_seed_weights(
    atom_sim: torch.Tensor, cfg: RetrieverConfig,
    ann: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Atom seed (row, col, value) triples from query-atom similarities [Q, A].

    ``ann``: (scores [Q, k], atom ids [Q, k]) of an approximate search, used instead of the exact
    top-k when ``atom_seeding="topk"`` (``retriever.vector_index="faiss"``).

    Returns (indices [2, M] int64 over (query, atom), values [M] float32).
    """
    q, a = atom_sim.shape
    alpha = cfg.atom_seed_weight
    if a == 0 or alpha == 0:
        return torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0)
    if cfg.atom_seeding == "all_minmax":
        lo = atom_sim.min(dim=1, keepdim=True).values  # [Q, 1]
        hi = atom_sim.max(dim=1, keepdim=True).values  # [Q, 1]
        norm = (atom_sim - lo) / (hi - lo).clamp_min(1e-12)  # [Q, A] in [0, 1]
        rows = torch.arange(q).repeat_interleave(a)
        cols = torch.arange(a).repeat(q)
        return torch.stack([rows, cols]), (alpha * norm).reshape(-1).float()
    k = min(cfg.atom_seed_top_k, a)
    vals, idx = atom_sim.topk(k, dim=1)  # [Q, k]
    if ann is not None:  # switch #11: the top-k from an HNSW index (approximate)
        vals, idx = ann
        vals = vals.masked_fill(torch.isinf(vals), 0.0)  # unfilled slots: weight 0
    rows = torch.arange(q).repeat_interleave(k)
    # negative cosines would subtract mass; a seed weight must be non-negative
    return torch.stack([rows, idx.reshape(-1)]), (alpha * vals.clamp_min(0)).reshape(-1).float()


def build_seeds(
    graph: AtomEntityGraph,
    query_embeddings: torch.Tensor,
    query_entities: list[list[str]],
    encode_entities: Callable[[list[str]], torch.Tensor],
    cfg: RetrieverConfig,
    link_instruction: str | None = None,
    *,
    lexical: Any = None,
    queries: Sequence[str] = (),
    passage_seeds: tuple[torch.Tensor, torch.Tensor] | None = None,
    num_nodes: int | None = None,
) -> SeedSet:
    """The [Q, N] personalisation matrix of a batch of queries.

    ``lexical`` (a ``retrieve.lexical.LexicalScorer``) with the query texts ``queries`` mixes BM25
    into entity linking and atom seeds; ``passage_seeds`` ((query, passage) indices [2, M], values
    [M]) seed passage nodes at columns ``graph.num_nodes + passage`` of a ``num_nodes``-wide matrix.
    ``link_instruction`` is glued before the query entity names embedded for linking (the released
    query-to-node instruction, ``engine.wiring.link_instruction``); None: the names alone.
    """
    n_q = query_embeddings.shape[0]
    e_count = graph.num_entities
    if link_instruction is not None:
        from atomicrag.embed.released_instructions import glue

        plain_encode = encode_entities
        encode_entities = lambda xs: plain_encode(glue(link_instruction, xs))  # noqa: E731
    entity_seeds = link_entities(query_entities, graph, encode_entities, cfg, lexical,
                                 fallback=cfg.entity_link_fallback)
    rows: list[torch.Tensor] = []
    cols: list[torch.Tensor] = []
    vals: list[torch.Tensor] = []
    for qi, seeds in enumerate(entity_seeds):
        if seeds:
            rows.append(torch.full((len(seeds),), qi, dtype=torch.int64))
            cols.append(torch.tensor([e for e, _ in seeds], dtype=torch.int64))
            vals.append(torch.tensor([w for _, w in seeds], dtype=torch.float32))
    atom_sim = None
    if graph.atom_embeddings is not None and graph.num_atoms:
        atom_sim = query_embeddings @ graph.atom_embeddings.T  # [Q, d] @ [d, A] -> [Q, A]
        seed_sim = atom_sim
        if lexical is not None and cfg.lexical_weight > 0:
            w = cfg.lexical_weight
            seed_sim = (1 - w) * atom_sim + w * lexical.atom_scores(queries)  # [Q, A]
        ann = None
        if cfg.vector_index == "faiss" and cfg.atom_seeding == "topk":  # switch #11 (dense part)
            from atomicrag.retrieve.ann import ann_topk

            ann = ann_topk(graph.atom_embeddings, query_embeddings, min(cfg.atom_seed_top_k, graph.num_atoms))
        idx, v = atom_seed_weights(seed_sim, cfg, ann)
        rows.append(idx[0])
        cols.append(idx[1] + e_count)  # atom nodes follow the entity nodes
        vals.append(v)
    if passage_seeds is not None and passage_seeds[1].numel():
        rows.append(passage_seeds[0][0])
        cols.append(passage_seeds[0][1] + graph.num_nodes)  # passage nodes follow the atom nodes
        vals.append(passage_seeds[1])
    if rows:
        indices = torch.stack([torch.cat(rows), torch.cat(cols)])
        values = torch.cat(vals)
    else:
        indices, values = torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0)
    matrix = torch.sparse_coo_tensor(
        indices, values, (n_q, num_nodes or graph.num_nodes), check_invariants=False
    ).coalesce()
    return SeedSet(matrix, query_entities, entity_seeds, atom_sim)
