"""What a configuration needs (LLM, embedder, graph), computed once from the registries' declarations."""
from __future__ import annotations

from atomicrag.core.config import Config, RetrieverConfig
from atomicrag.core.registry import ATOMIZERS, DECOMPOSERS, JUDGES, READERS, RETRIEVERS, SIEVES

INDEX_STAGES = ("atomizer",)
QUERY_STAGES = ("retriever", "decompose", "sieve")
ANSWER_STAGES = ("reader", "judge")


def stage_needs(cfg: Config) -> dict[str, frozenset[str]]:
    """``{stage: needs}`` for every configured stage (config section name -> its entry's declaration).
    A judge is a harness stage: only a config with a ``judge`` section (``HarnessConfig``) has one."""
    out = {
        "atomizer": ATOMIZERS.needs(cfg.atomizer.name, cfg.atomizer),
        "retriever": RETRIEVERS.needs(cfg.retriever.name, cfg.retriever),
        "decompose": DECOMPOSERS.needs(cfg.decompose.name, cfg.decompose),
        "sieve": SIEVES.needs(cfg.sieve.name, cfg.sieve),
        "reader": READERS.needs(cfg.reader.name, cfg.reader),
    }
    judge = getattr(cfg, "judge", None)
    if judge is not None:
        out["judge"] = JUDGES.needs(judge.name, judge)
    return out


def needs(cfg: Config, what: str, stages: tuple[str, ...] | None = None) -> bool:
    """Whether any of ``stages`` (default: all) needs ``what``; a graph index is only built for a
    retriever that needs one, and the atomizer only runs for it."""
    per = stage_needs(cfg)
    if "graph" not in per["retriever"]:
        per.pop("atomizer")  # no graph, no atoms (dense_passage ranks chunks)
    return any(what in per[s] for s in (stages or tuple(per)) if s in per)


def needs_llm(cfg: Config, stages: tuple[str, ...] | None = None) -> bool:
    return needs(cfg, "llm", stages)


def uses_atom_embeddings(retriever: RetrieverConfig) -> bool:
    """The retriever scores atoms by their vectors (it takes atom and query embeddings)."""
    return "atom_embeddings" in RETRIEVERS.needs(retriever.name, retriever)
