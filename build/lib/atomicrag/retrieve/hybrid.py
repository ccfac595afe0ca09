"""Hybrid offline retrieval around the PPR: BM25 seeding, passage nodes, fused passage ranking.

The query engine (retrieve/engine.py) hands its seeding and propagation here when any of the
``RetrieverConfig`` hybrid fields is switched on (``lexical_weight``, ``passage_nodes``,
``passage_ranking`` other than ``best_atom``, ``fusion_lexical_weight``); otherwise the engine
runs the paper's PPR unchanged. Everything is CPU-cheap and query-time: the BM25 index and the
passage layer are built from the stored graph once per graph (a few seconds on 2Wiki's 22k
atoms) and shared by every engine over that graph, so a sweep of retriever variants in one
process builds them once.
"""
from __future__ import annotations

from typing import Any

import torch

from atomicrag.core.config import RetrieverConfig
from atomicrag.graph.structure import AtomEntityGraph
from atomicrag.retrieve.lexical import LexicalScorer
from atomicrag.retrieve.passage_nodes import (
    PassageLayer,
    bridge_topk,
    build_passage_layer,
    dense_passage_scores,
    passage_seeds,
    per_passage,
    rank_passages,
)
from atomicrag.retrieve.propagate import topk_atoms

# Built parts per graph: keyed by the identity of the graph's adjacency and atom embeddings, which
# every update (graph/incremental.py) replaces; holding them keeps those ids from being reused.
_PARTS: dict[tuple[int, int, str], tuple[Any, Any, Any]] = {}
_MAX_CACHED = 4


def uses_hybrid(cfg: RetrieverConfig) -> bool:
    """Whether ``cfg`` switches on any hybrid lever (else the engine runs the plain PPR)."""
    return (cfg.lexical_weight > 0 or cfg.passage_nodes or cfg.passage_ranking != "best_atom"
            or cfg.fusion_lexical_weight > 0)


def _cached(graph: AtomEntityGraph, what: str, build: Any) -> Any:
    key = (id(graph.adjacency), id(graph.atom_embeddings), what)
    if key not in _PARTS:
        if len(_PARTS) >= _MAX_CACHED * 3:
            _PARTS.pop(next(iter(_PARTS)))
        _PARTS[key] = (graph.adjacency, graph.atom_embeddings, build())
    return _PARTS[key][2]


class HybridRetriever:
    """Seeding inputs, propagation and passage scores of the hybrid levers for one graph."""

    def __init__(self, cfg: RetrieverConfig, graph: AtomEntityGraph) -> None:
        self.cfg = cfg
        self.graph = graph
        self.lexical: LexicalScorer | None = None
        if cfg.lexical_weight > 0 or cfg.fusion_lexical_weight > 0:
            self.lexical = _cached(graph, "bm25", lambda: LexicalScorer([a.text for a in graph.atoms],
                                                                          graph.entity_texts))
        self.layer: PassageLayer = _cached(
            graph, f"passages:{cfg.passage_nodes}:{cfg.passage_edge_weight}",
            lambda: build_passage_layer(graph, cfg.passage_edge_weight, cfg.passage_nodes))
        self.passage_scores: torch.Tensor | None = None  # [Q, P] of the last propagate() call
        self.topk_passages: tuple[torch.Tensor, torch.Tensor] | None = None  # bridge: ([Q, d], [Q, d])

    @property
    def needs_scores(self) -> bool:
        """Whether propagation must return every node's score (passage nodes or passage ranking);
        BM25 seeding alone changes only the seeds, so the engine keeps PPR's fused top-k path."""
        return self.cfg.passage_nodes or self.cfg.passage_ranking not in ("best_atom", "bridge")

    @property
    def adjacency(self) -> torch.Tensor:
        return self.layer.adjacency if self.layer.adjacency is not None else self.graph.adjacency

    def seed_inputs(self, queries: list[str], q_emb: torch.Tensor) -> dict[str, Any]:
        """Keyword inputs of ``seeds.build_seeds`` for this batch."""
        out: dict[str, Any] = {"lexical": self.lexical, "queries": queries}
        if self.layer.adjacency is not None:
            out["num_nodes"] = self.layer.adjacency.shape[0]
            if self.cfg.passage_seed_weight > 0:
                dense = self._dense(q_emb)
                out["passage_seeds"] = passage_seeds(dense, self.cfg.passage_seed_weight, self.cfg.passage_seed_top_k)
        return out

    def _dense(self, q_emb: torch.Tensor) -> torch.Tensor:
        atom_sim = q_emb @ self.graph.atom_embeddings.T  # [Q, d] @ [d, A] -> [Q, A]
        return dense_passage_scores(q_emb, atom_sim, self.layer)  # [Q, P]

    def propagate(self, propagator: Any, seeds: torch.Tensor, queries: list[str], q_emb: torch.Tensor,
                  top_k: int, query_batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k atoms ``(scores [Q, k], atom idx [Q, k])``; passage scores kept in ``passage_scores``."""
        g, cfg = self.graph, self.cfg
        e, a, n = g.num_entities, g.num_atoms, g.num_nodes
        vals, idx, ranked = [], [], []
        seeds = seeds.coalesce()
        for q0 in range(0, seeds.shape[0], query_batch):
            q1 = min(seeds.shape[0], q0 + query_batch)
            part = seeds.index_select(0, torch.arange(q0, q1))  # [b, N(+P)]
            scores = propagator(self.adjacency, part, num_entities=e)  # [b, N(+P)]
            v, i = topk_atoms(scores[:, :n], e, top_k)  # [b, k]
            vals.append(v.cpu())
            idx.append(i.cpu())
            if cfg.passage_ranking != "best_atom":
                qe = q_emb[q0:q1]
                lex = None
                if self.lexical is not None and cfg.fusion_lexical_weight > 0:
                    lex = per_passage(self.lexical.atom_scores(queries[q0:q1]), self.layer, "amax")  # [b, P]
                ranked.append(rank_passages(
                    cfg.passage_ranking, self.layer, atom_scores=scores[:, e:e + a].float(),
                    passage_scores=scores[:, n:].float() if self.layer.adjacency is not None else None,
                    dense=self._dense(qe), lexical=lex,
                    dense_weight=self.cfg.fusion_dense_weight, lexical_weight=self.cfg.fusion_lexical_weight,
                    bridge_weight=self.cfg.bridge_weight,
                ).cpu())
        self.passage_scores = torch.cat(ranked) if ranked else None
        self.topk_passages = None
        if not vals:
            return torch.zeros(0, 0), torch.zeros(0, 0, dtype=torch.int64)
        return torch.cat(vals), torch.cat(idx)

    def rank_topk(self, vals: torch.Tensor, idx: torch.Tensor, depth: int = 25) -> None:
        """Bridge ranking from the fused top-k path: ``vals``/``idx`` ``[Q, k]`` are each query's
        top-k atoms (scores, atom indices); kept as each query's ``depth`` best passages."""
        if self.cfg.passage_ranking != "bridge" or self.cfg.passage_nodes:
            return
        self.passage_scores = None
        self.topk_passages = bridge_topk(self.layer, vals, idx, self.cfg.bridge_weight, depth)

    def ranked_passages(self, rows: range, depth: int = 25) -> list[str] | None:
        """Passage ids of a question (its queries' ``rows``) by their best score, or None for best_atom."""
        if self.topk_passages is not None:  # bridge ranking: [Q, depth] per query, merged by best score
            scores, passages = (t[rows.start:rows.stop] for t in self.topk_passages)
            best: dict[int, float] = {}
            for s, p in zip(scores.reshape(-1).tolist(), passages.reshape(-1).tolist()):
                if p >= 0 and s > best.get(p, float("-inf")):
                    best[p] = s
            top = sorted(best, key=lambda p: -best[p])[:depth]  # stable: ties keep first-seen order
            return [self.layer.passage_ids[p] for p in top]
        if self.passage_scores is None:
            return None
        best = self.passage_scores[rows.start:rows.stop].max(dim=0).values  # [P]
        vals, top = best.topk(min(depth, best.numel()))
        return [self.layer.passage_ids[p] for v, p in zip(vals.tolist(), top.tolist()) if v != float("-inf")]
