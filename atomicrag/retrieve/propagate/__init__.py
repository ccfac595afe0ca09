"""Graph propagation: every retriever of Table 11 on a whole batch of queries at once.

    prop = build_propagator(cfg.retriever)
    scores = prop(graph.adjacency, seeds)              # [Q, N], node order: entities then atoms
    top_scores, atom_idx = topk_atoms(scores, graph.num_entities, cfg.retriever.top_k)

    # retrieval only needs the top-k: memory-bounded, and for PPR straight from its blocks
    top_scores, atom_idx = propagate_topk(prop, graph.adjacency, seeds, graph.num_entities, 25)

Methods needing embeddings (``qiter``, ``dense``) also take ``atom_embeddings=[A, d]``,
``query_embeddings=[Q, d]`` and ``num_entities=E`` as keywords; the others ignore extra keywords.
``ppr`` solves to the accuracy of ``max_iter`` power iterations (Chebyshev, certified per query);
through ``topk``/``propagate_topk`` a query also stops once its top-k atom set is certified exact
(``retriever.ppr_stop=topk``, default; ``certify.py``). ``ppr_stop=fixed`` (or
``build_propagator(cfg, solver="power")``) runs literally ``max_iter`` power steps; ``power``
is Table 11's exact variant. See ``ppr.py`` for the performance notes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from atomicrag.retrieve.propagate.base import Propagator, seed_triplets
from atomicrag.retrieve.propagate.builders import EXACT_MAX_ITER, EXACT_TOL, restart_probability
from atomicrag.retrieve.propagate.ppr import PPR
from atomicrag.retrieve.propagate.qiter import QIter
from atomicrag.retrieve.propagate.rwr import RandomWalkRestart
from atomicrag.retrieve.propagate.topk import propagate_topk, topk_atoms
from atomicrag.retrieve.propagate.variants import DenseSimilarity, Katz, LabelPropagation, WeightedBFS

if TYPE_CHECKING:  # only torch at import time: the GPU check runs this package on a bare machine
    from atomicrag.core.config import RetrieverConfig


def _graph_methods() -> tuple[str, ...]:
    from atomicrag.core.registry import RETRIEVERS

    return tuple(n for n in RETRIEVERS.names() if "graph" in RETRIEVERS.needs(n))


def __getattr__(name: str) -> Any:
    # METHODS asks the registry, which imports every package's registrations (and so the config,
    # omegaconf): on first use only, so the kernels above import with torch alone (the GPU check)
    if name == "METHODS":
        return _graph_methods()  # the graph retrievers of registry.RETRIEVERS (dense_passage is not one)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_propagator(cfg: RetrieverConfig, **overrides: Any) -> Propagator:
    """The propagator named by ``cfg.name`` (its ``registry.RETRIEVERS`` builder); ``overrides``
    go to its constructor (e.g. solver=)."""
    from atomicrag.core.registry import RETRIEVERS

    if cfg.name not in RETRIEVERS or "graph" not in RETRIEVERS.needs(cfg.name, cfg):
        raise ValueError(f"retriever {cfg.name!r} is not a graph propagator; known: {', '.join(_graph_methods())}")
    return RETRIEVERS.get(cfg.name)(cfg, **overrides)


__all__ = [
    "EXACT_MAX_ITER",
    "EXACT_TOL",
    "METHODS",
    "PPR",
    "DenseSimilarity",
    "Katz",
    "LabelPropagation",
    "Propagator",
    "QIter",
    "RandomWalkRestart",
    "WeightedBFS",
    "build_propagator",
    "propagate_topk",
    "restart_probability",
    "seed_triplets",
    "topk_atoms",
]
