"""What the rows of a table switch: the baseline rows a run can add (``Config.baselines``).

Data only, so configuration checks can name the valid baselines without importing the harness
that runs them (:mod:`atomicrag.harness.baselines`).
"""
from __future__ import annotations

from typing import Any

BASELINES: dict[str, dict[str, Any]] = {
    # vanilla RAG: dense retrieval over passages, same reader and LLM
    "dense_passage": {"retriever.name": "dense_passage", "decompose.name": "none", "sieve.name": "none"},
    # AtomicRAG without the graph (paper's w/o ERGR): atoms ranked by similarity alone
    "dense_atoms": {"retriever.name": "dense"},
}

# retriever fields each baseline's retriever reads; the others are reset to their defaults.
# dense_atoms keeps the seeding fields its traces show (query entities), not the PPR ones.
BASELINE_READS: dict[str, tuple[str, ...]] = {
    "dense_passage": ("name", "passage_top_k", "reranker", "rerank_candidates", "device"),
    "dense_atoms": ("name", "top_k", "query_batch", "device", "query_entities", "entity_top_k",
                    "entity_sim_threshold", "atom_seed_weight", "atom_seed_top_k"),
}
