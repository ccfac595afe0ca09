"""Propagator builders, one per graph ``retriever.name`` (``registry.RETRIEVERS``).

Signature ``(cfg: RetrieverConfig, **overrides) -> Propagator``;
``overrides`` go to the constructor (e.g. ``solver="power"``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from atomicrag.retrieve.propagate.base import Propagator

if TYPE_CHECKING:  # only torch at import time (the GPU check runs this package on a bare machine)
    from atomicrag.core.config import RetrieverConfig

EXACT_TOL = 1e-10  # L1 change per query at which the "power" (exact) variant stops
EXACT_MAX_ITER = 1000


def restart_probability(cfg: RetrieverConfig) -> float:
    """The restart probability that ``cfg.damping`` means under ``cfg.damping_semantics``.

    "restart": the paper's Eq. 7 (rho = restart probability). "continue": igraph's damping, as the
    released code calls ``personalized_pagerank(damping=0.3)``, so restart = 1 - damping.
    """
    r = cfg.damping if cfg.damping_semantics == "restart" else 1.0 - cfg.damping
    if r <= 0.0:
        raise ValueError(f"damping={cfg.damping} with {cfg.damping_semantics!r} semantics gives restart 0")
    return r


def ppr(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    from atomicrag.retrieve.propagate.ppr import PPR

    kw: dict[str, Any] = {
        "restart": restart_probability(cfg), "max_iter": cfg.max_iter, "tol": cfg.tol,
        "dangling": cfg.dangling, "device": cfg.device, "solver": "chebyshev",
        "stop": "accuracy" if cfg.ppr_stop == "fixed" else cfg.ppr_stop,
    }
    if cfg.ppr_stop == "fixed":  # exactly max_iter plain power steps: reproduces fixed-step code
        kw["solver"] = "power"
    if cfg.ppr_solve == "exact":
        # the released code's PRPACK solve is exact at every damping: solve each query to a residual
        # bound of EXACT_TOL (float64: float32 cannot resolve it), scores and order included
        kw.update(tol=EXACT_TOL, max_iter=max(cfg.max_iter, EXACT_MAX_ITER), dtype="float64", stop="accuracy")
    return PPR(**{**kw, **overrides})


def power(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    """Table 11's exact variant: plain power iteration, float64, to tolerance."""
    return ppr(cfg, **{"solver": "power", "max_iter": EXACT_MAX_ITER, "tol": EXACT_TOL,
                                 "dtype": "float64", **overrides})


def rwr(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    from atomicrag.retrieve.propagate.rwr import RandomWalkRestart

    return RandomWalkRestart(**{"restart": restart_probability(cfg), "num_walks": cfg.num_walks,
                                "walk_length": cfg.walk_length, "rng_seed": cfg.rng_seed,
                                "dangling": cfg.dangling, "device": cfg.device, **overrides})


def katz(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    from atomicrag.retrieve.propagate.variants import Katz

    return Katz(**{"beta": cfg.katz_beta, "max_iter": cfg.max_iter, "device": cfg.device, **overrides})


def labelprop(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    from atomicrag.retrieve.propagate.variants import LabelPropagation

    return LabelPropagation(**{"max_iter": cfg.max_iter, "device": cfg.device, **overrides})


def bfs(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    from atomicrag.retrieve.propagate.variants import WeightedBFS

    return WeightedBFS(**{"decay": cfg.bfs_decay, "max_hops": cfg.bfs_max_hops, "device": cfg.device, **overrides})


def qiter(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    from atomicrag.retrieve.propagate.qiter import QIter

    return QIter(**{"traversal_depth": cfg.traversal_depth, "beam_size": cfg.beam_size,
                    "anchor_top_k": cfg.anchor_top_k, "query_update_weight": cfg.query_update_weight,
                    "device": cfg.device, **overrides})


def dense(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    from atomicrag.retrieve.propagate.variants import DenseSimilarity

    ann_k = cfg.top_k if cfg.vector_index == "faiss" else None  # switch #11: HNSW top-k
    return DenseSimilarity(**{"device": cfg.device, "ann_k": ann_k, **overrides})
