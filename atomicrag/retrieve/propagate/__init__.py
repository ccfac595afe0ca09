"""Graph propagation: every retriever of Table 11 on a whole batch of queries at once.

    prop = build_propagator(cfg.retriever, cfg.fidelity)
    scores = prop(graph.adjacency, seeds)              # [Q, N], node order: entities then atoms
    top_scores, atom_idx = topk_atoms(scores, graph.num_entities, cfg.retriever.top_k)

    # retrieval only needs the top-k: memory-bounded, and for PPR straight from its blocks
    top_scores, atom_idx = propagate_topk(prop, graph.adjacency, seeds, graph.num_entities, 25)

Methods needing embeddings (``qiter``, ``dense``) also take ``atom_embeddings=[A, d]``,
``query_embeddings=[Q, d]`` and ``num_entities=E`` as keywords; the others ignore extra keywords.
``ppr`` solves to the accuracy of ``max_iter`` power iterations (Chebyshev, certified per query;
``build_propagator(cfg, fid, solver="power")`` runs literally ``max_iter`` power steps); ``power``
is Table 11's exact variant. See ``ppr.py`` for the performance notes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Propagator, seed_triplets
from .ppr import PPR
from .qiter import QIter
from .rwr import RandomWalkRestart
from .topk import propagate_topk, topk_atoms
from .variants import DenseSimilarity, Katz, LabelPropagation, WeightedBFS

if TYPE_CHECKING:  # only torch at import time: the GPU check runs this package on a bare machine
    from ...config import FidelityConfig, RetrieverConfig

METHODS = ("ppr", "power", "rwr", "katz", "labelprop", "bfs", "qiter", "dense")
EXACT_TOL = 1e-10  # L1 change per query at which the "power" (exact) variant stops
EXACT_MAX_ITER = 1000


def restart_probability(cfg: RetrieverConfig, fidelity: FidelityConfig) -> float:
    """The restart probability that ``cfg.damping`` means under the chosen fidelity.

    "restart": the paper's Eq. 7 (rho = restart probability). "continue": igraph's damping, as the
    released code calls ``personalized_pagerank(damping=0.3)``, so restart = 1 - damping.
    """
    r = cfg.damping if fidelity.damping_semantics == "restart" else 1.0 - cfg.damping
    if r <= 0.0:
        raise ValueError(f"damping={cfg.damping} with {fidelity.damping_semantics!r} semantics gives restart 0")
    return r


def build_propagator(cfg: RetrieverConfig, fidelity: FidelityConfig, **overrides: Any) -> Propagator:
    """The propagator named by ``cfg.name``; ``overrides`` go to its constructor (e.g. solver=)."""
    name = cfg.name
    if name in ("ppr", "power"):
        kw: dict[str, Any] = {
            "restart": restart_probability(cfg, fidelity), "max_iter": cfg.max_iter, "tol": cfg.tol,
            "dangling": fidelity.dangling, "device": cfg.device, "solver": "chebyshev",
            "stop": "accuracy" if cfg.ppr_stop == "fixed" else cfg.ppr_stop,
        }
        if cfg.ppr_stop == "fixed":  # exactly max_iter plain power steps: reproduces fixed-step code
            kw["solver"] = "power"
        if name == "power":  # Table 11's exact variant: plain power iteration, float64, to tolerance
            kw.update(solver="power", max_iter=EXACT_MAX_ITER, tol=EXACT_TOL, dtype="float64")
        kw.update(overrides)
        return PPR(**kw)
    if name == "rwr":
        return RandomWalkRestart(
            **{"restart": restart_probability(cfg, fidelity), "num_walks": cfg.num_walks,
               "walk_length": cfg.walk_length, "rng_seed": cfg.rng_seed, "dangling": fidelity.dangling,
               "device": cfg.device, **overrides})
    if name == "katz":
        return Katz(**{"beta": cfg.katz_beta, "max_iter": cfg.max_iter, "device": cfg.device, **overrides})
    if name == "labelprop":
        return LabelPropagation(**{"max_iter": cfg.max_iter, "device": cfg.device, **overrides})
    if name == "bfs":
        return WeightedBFS(**{"decay": cfg.bfs_decay, "max_hops": cfg.bfs_max_hops, "device": cfg.device,
                              **overrides})
    if name == "qiter":
        return QIter(**{"traversal_depth": cfg.traversal_depth, "beam_size": cfg.beam_size,
                        "anchor_top_k": cfg.anchor_top_k, "query_update_weight": cfg.query_update_weight,
                        "device": cfg.device, **overrides})
    if name == "dense":
        return DenseSimilarity(**{"device": cfg.device, **overrides})
    raise ValueError(f"retriever {name!r} is not a graph propagator; known: {', '.join(METHODS)}")


__all__ = [
    "METHODS", "PPR", "DenseSimilarity", "Katz", "LabelPropagation", "Propagator", "QIter",
    "RandomWalkRestart", "WeightedBFS", "build_propagator", "propagate_topk",
    "restart_probability", "seed_triplets", "topk_atoms",
]
