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


# The retriever section's fields each variant reads (``reads=``): one flat section serves nine
# variants, so which field matters for which is declared with the variant, held to what the code
# does by tests/retrieve/test_retriever_reads.py (it records the reads of each variant). A
# baseline's settings (harness/rows.py) and the note on a setting the chosen variant ignores
# (``RETRIEVERS.unread_settings``) come from these.
_COMMON = ("name", "device")
_SEEDING = ("top_k", "query_batch", "query_entities", "query_ner_max_tokens", "query_ner_timeout_s",
            "query_entity_max_df",
            "entity_top_k", "entity_sim_threshold", "atom_seed_weight", "atom_seed_top_k", "lexical_weight",
            "atom_seeding", "vector_index", "entity_link_fallback")
_PASSAGES = ("passage_nodes", "passage_edge_weight", "passage_seed_weight", "passage_seed_top_k",
             "passage_ranking", "bridge_weight", "fusion_dense_weight", "fusion_lexical_weight")
_PROPAGATION = (*_COMMON, *_SEEDING, *_PASSAGES)  # scores spread over the graph
_READS: dict[str, tuple[str, ...]] = {
    "ppr": (*_PROPAGATION, "damping", "damping_semantics", "dangling", "max_iter", "tol", "ppr_stop", "ppr_solve"),
    "power": (*_PROPAGATION, "damping", "damping_semantics", "dangling", "max_iter", "tol", "ppr_stop", "ppr_solve"),
    "rwr": (*_PROPAGATION, "damping", "damping_semantics", "dangling", "num_walks", "walk_length", "rng_seed"),
    "katz": (*_PROPAGATION, "max_iter", "katz_beta"),
    "labelprop": (*_PROPAGATION, "max_iter"),
    "bfs": (*_PROPAGATION, "bfs_decay", "bfs_max_hops"),
    "qiter": (*_COMMON, *_SEEDING, "traversal_depth", "beam_size", "anchor_top_k", "query_update_weight"),
    "dense": (*_COMMON, *_SEEDING),
}

for _name in ("ppr", "power", "rwr", "katz", "labelprop", "bfs"):
    RETRIEVERS.add(_name, f"atomicrag.retrieve.propagate.builders:{_name}", needs=_graph_retriever(),
                   reads=_READS[_name])
for _name in ("qiter", "dense"):  # score atoms by their vectors: they get atom + query embeddings
    RETRIEVERS.add(_name, f"atomicrag.retrieve.propagate.builders:{_name}",
                   needs=_graph_retriever({"atom_embeddings"}), reads=_READS[_name])
RETRIEVERS.add("dense_passage", "atomicrag.retrieve.dense_passage:retrieve_passages", needs=EMB,
               reads=(*_COMMON, "passage_top_k", "reranker", "rerank_candidates"))

DECOMPOSERS.add("llm", "atomicrag.retrieve.decompose:LLMDecomposer", needs=LLM)
DECOMPOSERS.add("none", "atomicrag.retrieve.decompose:NoDecomposer")
SIEVES.add("llm", "atomicrag.retrieve.sieve:LLMSieve", needs=LLM)
SIEVES.add("none", "atomicrag.retrieve.sieve:NoSieve")
