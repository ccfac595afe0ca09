"""The query side's stages built from a whole config: each stage is handed only its sections.

``batch_retriever`` gives the retriever its retriever, decompose and sieve sections, the shared
released-code settings (``fidelity``) and the LLM's sampling; ``context_builder`` gives the
reader's context its reader and sieve sections and the LLM's document limit and size. The engine
(``engine.Engine``) and tests that wire a retriever by hand build them here, so the retriever
never reads the reader's budget or the LLM's size.
"""
from __future__ import annotations

from typing import Any

from atomicrag.core.config import Config
from atomicrag.embed.factory import query_to_node
from atomicrag.engine.context_builder import ReaderContextBuilder
from atomicrag.graph.structure import AtomEntityGraph
from atomicrag.llm.sampling import sampling
from atomicrag.retrieve.query_batch import BatchRetriever


def link_instruction(cfg: Config) -> str | None:
    """The text glued before query entity names embedded for linking: the released query-to-node
    instruction under ``embedder.embed_instruction=released`` for an embedder the released code
    covers, and the released prompts; None otherwise (the names alone)."""
    return query_to_node(cfg.embedder, cfg.fidelity)


def batch_retriever(cfg: Config, graph: AtomEntityGraph, embedder: Any, llm: Any = None,
                    accountant: Any = None) -> BatchRetriever:
    """The retriever of ``cfg`` over ``graph``: its sections, with the LLM's sampling and the
    atomizer's spaCy model (query entities named as the passages' were)."""
    return BatchRetriever(cfg.retriever, cfg.decompose, cfg.sieve, graph, embedder,
                          fidelity=cfg.fidelity, sampling=sampling(cfg.llm, fidelity=cfg.fidelity),
                          llm=llm, accountant=accountant, spacy_model=cfg.atomizer.spacy_model,
                          link_instruction=link_instruction(cfg))


def context_builder(cfg: Config, graph: AtomEntityGraph) -> ReaderContextBuilder:
    """The reader's context over ``graph``: the reader and sieve sections, the fidelity preset
    (``reader.context=auto``) and the LLM option's document limit and stated size."""
    return ReaderContextBuilder(cfg.reader, cfg.sieve, graph, fidelity_preset=cfg.fidelity.preset,
                               llm_documents=cfg.llm.reader_documents, reader_params_b=cfg.llm.params_b)
