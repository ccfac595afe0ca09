"""Atom-Entity Graph construction (paper section 3.1): nodes, three edge types, embeddings.

One code path builds and updates: ``update_graph(prev, atoms, triples, ...)`` assembles the graph
of ``atoms``/``triples`` reusing what ``prev`` holds (embeddings by text, directed synonym rows;
see ``graph.incremental``), and a build is an update from empty (``prev=None``). ``build_graph``
is that build for an atomize result. Both are pure functions of the atoms, triples, embedder and
``GraphConfig``, whose released-code switches (``GRAPH_FIDELITY_FIELDS``) it reads too.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from atomicrag.core.config import GraphConfig
from atomicrag.core.gpu_memory import oom_names_stage
from atomicrag.core.schemas import Atom, AtomizeResult, Triple
from atomicrag.embed.protocol import Embedder
from atomicrag.graph.canon import entity_key_function
from atomicrag.graph.edges import adjacency, containment_edges, drop_pairs, entity_nodes, relevance_edges
from atomicrag.graph.embedding import Progress, embed_reusing, encode  # noqa: F401  (encode re-exported)
from atomicrag.graph.incremental import IndexedGraph, SynonymRows, rows_to_edges, update_synonym_rows
from atomicrag.graph.released_code import (
    directed_rows_to_edges,
    entity_embedding_texts,
    overwrite_relevance_by_direction,
    prepare_atoms_triples,
)
from atomicrag.graph.structure import AtomEntityGraph, EdgeList

log = logging.getLogger(__name__)

GRAPH_FIDELITY_FIELDS = ("entity_nodes", "containment_keys", "relevance_weight", "synonym_overwrites_relevance",
                         "triple_dedupe", "atom_merge", "entity_embedding_text", "synonym_direction",
                         "synonym_candidates")
GRAPH_FIELDS = ("synonym_threshold", "synonym_max_neighbors", "synonym_min_alnum")  # decide the edges
# fields keyed only away from their default, so graphs cached before the field existed stay valid
_KEYED_WHEN_SET = {"synonym_candidates": "both_ends"}


def graph_fidelity(cfg: GraphConfig) -> dict[str, Any]:
    """The released-code switches that decide a graph, as its cache key and metadata hold them
    (under "fidelity", where they were keyed before they moved into the graph section)."""
    out = {k: getattr(cfg, k) for k in GRAPH_FIDELITY_FIELDS
           if k not in _KEYED_WHEN_SET or getattr(cfg, k) != _KEYED_WHEN_SET[k]}
    if cfg.synonym_overwrites_relevance and cfg.synonym_direction == "directed":
        # graphs cached before synonyms overwrote relevance one direction at a time are not reused
        out["overwrite"] = "by_direction"
    return out


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    """Record wall and process CPU seconds of a stage (CPU time stays meaningful on a busy machine)."""
    w, c = time.perf_counter(), time.process_time()
    with oom_names_stage(name):  # a CUDA OOM names the graph stage and its setting
        yield
    timings[f"{name}_s"] = round(time.perf_counter() - w, 3)
    timings[f"{name}_cpu_s"] = round(time.process_time() - c, 3)


def _synonym_rows(prev: IndexedGraph | None, keys: list[str], texts: list[str], emb: torch.Tensor,
                  cfg: GraphConfig, candidates: str = "both_ends") -> tuple[SynonymRows, int]:
    """Directed synonym rows of the new entities, updating ``prev``'s rows where it has them."""
    n = len(keys)
    if prev is None or prev.rows is None:  # from empty (or rows unknown): every row
        return update_synonym_rows(None, torch.zeros(0, dtype=torch.int64), keys, emb,
                                   torch.ones(n, dtype=torch.bool), cfg, candidates)
    g = prev.graph
    # entity identity is (canonical key, surface text): a changed surface form re-embeds, so it
    # counts as deleted + added
    ident = {(k, t): j for j, (k, t) in enumerate(zip(keys, texts))}
    old_to_new = torch.tensor([ident.get((k, t), -1) for k, t in zip(g.entity_keys, g.entity_texts)],
                              dtype=torch.int64)
    fresh = torch.ones(n, dtype=torch.bool)
    fresh[old_to_new[old_to_new >= 0]] = False
    return update_synonym_rows(prev.rows, old_to_new, keys, emb, fresh, cfg, candidates)


def update_graph(prev: IndexedGraph | None, atoms: list[Atom], triples: list[Triple], embedder: Embedder | None,
                 cfg: GraphConfig, *, progress: Progress | None = None,
                 meta: dict[str, Any] | None = None) -> IndexedGraph:
    """The graph of ``atoms``/``triples``, reusing ``prev``'s work (``prev=None``: a fresh build).

    ``embedder=None`` builds the structure only (no embeddings, no synonym edges).
    """
    if not atoms:
        raise ValueError("cannot build a graph: zero atoms over all documents")
    atoms, triples = prepare_atoms_triples(atoms, triples, cfg)  # released-code dedupe/merge switches
    timings: dict[str, float] = {}
    with _timed(timings, "structure"):
        key_of = entity_key_function(cfg.entity_keys)
        ents = entity_nodes(atoms, triples, cfg.entity_nodes, key_of)
        num_e, num_a = len(ents.keys), len(atoms)
        if num_e == 0:
            log.warning("graph has no entity nodes (entity_nodes=%s, %d triples): atoms will be isolated",
                        cfg.entity_nodes, len(triples))
        contain, dropped = containment_edges(atoms, ents, cfg.containment_keys, key_of)
        relevance = relevance_edges(triples, ents, cfg.relevance_weight, key_of)

    g = prev.graph if prev is not None else None
    atom_emb = ent_emb = None
    rows, synonym = None, EdgeList.empty()
    new_atoms = new_ents = computed = 0
    if embedder is not None:
        with _timed(timings, "embed_atoms"):
            atom_emb, new_atoms = embed_reusing([a.text for a in atoms], [a.text for a in g.atoms] if g else [],
                                                g.atom_embeddings if g else None, embedder, "atom", progress)
        with _timed(timings, "embed_entities"):
            ent_emb, new_ents = embed_reusing(entity_embedding_texts(ents.keys, ents.texts, cfg),
                                              entity_embedding_texts(g.entity_keys, g.entity_texts, cfg) if g else [],
                                              g.entity_embeddings if g else None, embedder, "entity", progress)
        with _timed(timings, "synonym_knn"):
            rows, computed = _synonym_rows(prev if g is not None and g.entity_embeddings is not None else None,
                                           ents.keys, ents.texts, ent_emb, cfg, cfg.synonym_candidates)
            synonym = (directed_rows_to_edges(rows, num_e) if cfg.synonym_direction == "directed"
                       else rows_to_edges(rows, num_e))
        if progress is not None:
            progress("synonyms", 1, 1)

    with _timed(timings, "adjacency"):
        overwritten = 0
        if cfg.synonym_overwrites_relevance:
            # Released code: the synonym weight replaces the relevance weight of the same pair, one
            # direction at a time (directed synonyms); as a whole pair otherwise
            if cfg.synonym_direction == "directed" and rows is not None:
                relevance, overwritten = overwrite_relevance_by_direction(relevance, rows, num_e)
            else:
                relevance, overwritten = drop_pairs(relevance, synonym, num_e + num_a)
        edges = {"containment": contain, "relevance": relevance, "synonym": synonym}
        adj = adjacency(list(edges.values()), num_e + num_a)

    if dropped:
        log.info("containment: %d atom entity mentions found no entity node (containment_keys=%s)",
                 dropped, cfg.containment_keys)
    info: dict[str, Any] = {
        "containment_mentions_dropped": dropped,
        "relevance_overwritten_by_synonym": overwritten,
        "fidelity": graph_fidelity(cfg),
        "graph_cfg": {k: getattr(cfg, k) for k in GRAPH_FIELDS},
        "timings": timings,
        "last_update": {"new_atom_texts": new_atoms, "new_entity_texts": new_ents, "synonym_rows_computed": computed,
                        "incremental": prev is not None},
        **(meta or {}),
    }
    graph = AtomEntityGraph(entity_keys=ents.keys, entity_texts=ents.texts, atoms=atoms, edges=edges,
                            adjacency=adj, atom_embeddings=atom_emb, entity_embeddings=ent_emb,
                            embedder_name=embedder.name if embedder is not None else "", meta=info)
    return IndexedGraph(graph, rows)


def build_graph(atomize_result: AtomizeResult, embedder: Embedder | None, cfg: GraphConfig,
                *, progress: Progress | None = None) -> AtomEntityGraph:
    """The graph of an atomize result: ``update_graph`` from empty. ``embedder=None``: structure only."""
    if not atomize_result.atoms:
        n_fail = len(atomize_result.failures)
        raise ValueError(
            "cannot build a graph: zero atoms over all chunks"
            + (f" ({n_fail} chunks failed; first: {atomize_result.failures[0].reason})" if n_fail else "")
        )
    meta = {"failed_chunks": len(atomize_result.failures), "atomize_llm_calls": atomize_result.llm_calls}
    return update_graph(None, atomize_result.atoms, atomize_result.triples, embedder, cfg,
                        progress=progress, meta=meta).graph
