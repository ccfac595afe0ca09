"""The retrievers, decomposers and sieves this package provides (see ``atomicrag.core.registry``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from atomicrag.core.registry import DECOMPOSERS, EMB, GRAPH, LLM, RETRIEVERS, SIEVES


def _graph_retriever(extra: Iterable[str] = ()) -> Callable[[Any], frozenset[str]]:
    # a graph retriever seeds from query entities: LLM NER when retriever.query_entities=llm
    def needs(cfg: Any) -> frozenset[str]:
        return GRAPH | set(extra) | (LLM if cfg is not None and cfg.query_entities == "llm" else frozenset())

    return needs


for _name in ("ppr", "power", "rwr", "katz", "labelprop", "bfs"):
    RETRIEVERS.add(_name, f"atomicrag.retrieve.propagate.builders:{_name}", needs=_graph_retriever())
for _name in ("qiter", "dense"):  # score atoms by their vectors: they get atom + query embeddings
    RETRIEVERS.add(_name, f"atomicrag.retrieve.propagate.builders:{_name}",
                   needs=_graph_retriever({"atom_embeddings"}))
RETRIEVERS.add("dense_passage", "atomicrag.retrieve.dense_passage:retrieve_passages", needs=EMB)

DECOMPOSERS.add("llm", "atomicrag.retrieve.decompose:LLMDecomposer", needs=LLM)
DECOMPOSERS.add("none", "atomicrag.retrieve.decompose:NoDecomposer")
SIEVES.add("llm", "atomicrag.retrieve.sieve:LLMSieve", needs=LLM)
SIEVES.add("none", "atomicrag.retrieve.sieve:NoSieve")
