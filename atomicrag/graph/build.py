"""Atom-Entity Graph construction (paper section 3.1): nodes, three edge types, embeddings.

``build_graph`` is a pure function of the atomize result, the embedder and the config slices
that matter (``GraphConfig`` and four ``FidelityConfig`` switches: entity_nodes,
containment_keys, relevance_weight, synonym_overwrites_relevance).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from .. import progress
from ..config import FidelityConfig, GraphConfig
from ..embed.protocol import Embedder
from ..schemas import AtomizeResult
from .edges import adjacency, containment_edges, drop_pairs, entity_nodes, relevance_edges
from .structure import AtomEntityGraph, EdgeList
from .synonyms import synonym_edges

log = logging.getLogger(__name__)

GRAPH_FIDELITY_FIELDS = ("entity_nodes", "containment_keys", "relevance_weight", "synonym_overwrites_relevance")


# Texts per embedder call: large enough that the encoder's own length-sorted batching still
# pads little; embedders that do not count their batches (progress.advance) move the bar per slice.
_PROGRESS_SLICE = 2048
_EMBED_STAGES = {"atom": "embed_atoms", "entity": "embed_entities"}  # the library's progress stage names


def encode(embedder: Embedder, texts: list[str], what: str) -> torch.Tensor:
    """Passage-side embeddings [n, dim] float32, L2-normalised, with a clear dimension check."""
    if not texts:
        return torch.zeros(0, embedder.dim, dtype=torch.float32)
    parts = []
    with progress.task(_EMBED_STAGES.get(what, f"embed_{what}s"), len(texts), unit="text") as bar:
        for i in range(0, len(texts), _PROGRESS_SLICE):
            part = texts[i: i + _PROGRESS_SLICE]
            parts.append(torch.as_tensor(embedder.encode(part, is_query=False)))
            bar.settle(i + len(part))
    emb = parts[0] if len(parts) == 1 else torch.cat(parts)
    if not isinstance(emb, torch.Tensor):
        emb = torch.as_tensor(emb)
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise ValueError(f"embedder {embedder.name!r} returned shape {tuple(emb.shape)} for {len(texts)} {what}")
    if emb.shape[1] != embedder.dim:
        raise ValueError(f"embedder {embedder.name!r} declares dim={embedder.dim} but returned "
                         f"{emb.shape[1]}-dimensional {what} embeddings")
    return torch.nn.functional.normalize(emb.detach().to("cpu", torch.float32), dim=1)


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    """Record wall and process CPU seconds of a stage (CPU time stays meaningful on a busy machine)."""
    w, c = time.perf_counter(), time.process_time()
    yield
    timings[f"{name}_s"] = round(time.perf_counter() - w, 3)
    timings[f"{name}_cpu_s"] = round(time.process_time() - c, 3)


def build_graph(atomize_result: AtomizeResult, embedder: Embedder | None, cfg: GraphConfig,
                fidelity: FidelityConfig) -> AtomEntityGraph:
    """Build the graph. ``embedder=None`` builds the structure only (no embeddings, no synonyms)."""
    atoms = atomize_result.atoms
    if not atoms:
        n_fail = len(atomize_result.failures)
        raise ValueError(
            "cannot build a graph: zero atoms over all chunks"
            + (f" ({n_fail} chunks failed; first: {atomize_result.failures[0].reason})" if n_fail else "")
        )
    timings: dict[str, float] = {}
    with _timed(timings, "structure"):
        ents = entity_nodes(atoms, atomize_result.triples, fidelity.entity_nodes)
        num_e, num_a = len(ents.keys), len(atoms)
        if num_e == 0:
            log.warning("graph has no entity nodes (entity_nodes=%s, %d triples): atoms will be isolated",
                        fidelity.entity_nodes, len(atomize_result.triples))
        contain, dropped = containment_edges(atoms, ents, fidelity.containment_keys)
        relevance = relevance_edges(atomize_result.triples, ents, fidelity.relevance_weight)

    atom_emb = ent_emb = None
    synonym = EdgeList.empty()
    if embedder is not None:
        with _timed(timings, "embed_atoms"):
            atom_emb = encode(embedder, [a.text for a in atoms], "atom")
        with _timed(timings, "embed_entities"):
            ent_emb = encode(embedder, ents.texts, "entity")
        with _timed(timings, "synonym_knn"):
            synonym = synonym_edges(ents.keys, ent_emb, threshold=cfg.synonym_threshold,
                                    max_neighbors=cfg.synonym_max_neighbors, min_alnum=cfg.synonym_min_alnum,
                                    batch=cfg.synonym_batch, device=cfg.device)

    with _timed(timings, "adjacency"):
        overwritten = 0
        if fidelity.synonym_overwrites_relevance:
            # Released code: the synonym weight replaces the relevance weight of the same pair.
            relevance, overwritten = drop_pairs(relevance, synonym, num_e + num_a)
        edges = {"containment": contain, "relevance": relevance, "synonym": synonym}
        adj = adjacency(list(edges.values()), num_e + num_a)

    meta: dict[str, Any] = {
        "containment_mentions_dropped": dropped,
        "relevance_overwritten_by_synonym": overwritten,
        "fidelity": {k: getattr(fidelity, k) for k in GRAPH_FIDELITY_FIELDS},
        "graph_cfg": {k: getattr(cfg, k) for k in ("synonym_threshold", "synonym_max_neighbors", "synonym_min_alnum")},
        "failed_chunks": len(atomize_result.failures),
        "atomize_llm_calls": atomize_result.llm_calls,
        "timings": timings,
    }
    if dropped:
        log.info("containment: %d atom entity mentions found no entity node (containment_keys=%s)",
                 dropped, fidelity.containment_keys)
    return AtomEntityGraph(
        entity_keys=ents.keys, entity_texts=ents.texts, atoms=atoms, edges=edges, adjacency=adj,
        atom_embeddings=atom_emb, entity_embeddings=ent_emb,
        embedder_name=embedder.name if embedder is not None else "", meta=meta,
    )
