"""What the released code does to the extraction output before it builds its graph.

Two released-code switches of ``GraphConfig`` act on the atomize result rather than on an edge type, so they
run once, before ``build_graph`` (a one-line hook there):

- ``triple_dedupe="per_chunk"``: the released ``filter_invalid_triples`` keeps each distinct
  (subject, predicate, object) of a chunk once, so under ``relevance_weight=occurrences`` a
  triple the LLM repeated within one passage adds 1, not 2, to the pair's weight. Strings are
  compared as extracted (the released code dedupes before its ``text_processing``).
- ``atom_merge="identical_text"``: the released code keys a fragment node by the hash of its
  text, so identical atom texts from different chunks are one node linked to the entities of
  every occurrence. The merged atom keeps the id, chunk and passage of its first occurrence
  (recall counts it for that passage) and the union of the entity mentions, in order.

``entity_embedding_texts`` is the third: ``entity_embedding_text="canonical"`` embeds the
processed string the released code stores (lower case, non-alphanumerics as spaces) instead of
the first-seen surface form.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import torch

from atomicrag.core.config import GraphConfig
from atomicrag.core.schemas import Atom, AtomizeResult, Triple
from atomicrag.graph.structure import EdgeList

if TYPE_CHECKING:
    from atomicrag.graph.incremental import SynonymRows


def dedupe_triples_per_chunk(triples: list[Triple]) -> list[Triple]:
    """Each distinct (chunk, subject, predicate, object) once, first occurrence kept, order kept."""
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Triple] = []
    for t in triples:
        key = (t.chunk_id, t.subject, t.predicate, t.object)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def merge_identical_atoms(atoms: list[Atom]) -> list[Atom]:
    """One atom per distinct text (exact string): first occurrence's ids, union of entities."""
    first: dict[str, int] = {}
    out: list[Atom] = []
    for a in atoms:
        at = first.get(a.text)
        if at is None:
            first[a.text] = len(out)
            out.append(dataclasses.replace(a, entities=list(a.entities)))
            continue
        kept = out[at]
        for e in a.entities:
            if e not in kept.entities:
                kept.entities.append(e)
    return out


def prepare_for_graph(result: AtomizeResult, cfg: GraphConfig) -> AtomizeResult:
    """The atomize result as the released code would feed it to its graph (a copy when changed)."""
    triples = result.triples
    atoms = result.atoms
    if cfg.triple_dedupe == "per_chunk":
        triples = dedupe_triples_per_chunk(triples)
    if cfg.atom_merge == "identical_text":
        atoms = merge_identical_atoms(atoms)
    if triples is result.triples and atoms is result.atoms:
        return result
    stats = dict(result.stats)
    stats["reference_prepare"] = {"triples_dropped": len(result.triples) - len(triples),
                                  "atoms_merged": len(result.atoms) - len(atoms)}
    return dataclasses.replace(result, atoms=atoms, triples=triples, stats=stats)


def prepare_atoms_triples(atoms: list[Atom], triples: list[Triple],
                          cfg: GraphConfig) -> tuple[list[Atom], list[Triple]]:
    """``prepare_for_graph`` on bare atom and triple lists (the incremental build's inputs)."""
    res = prepare_for_graph(AtomizeResult(atoms=atoms, triples=triples), cfg)
    return res.atoms, res.triples


def directed_rows_to_edges(rows: SynonymRows, num_entities: int) -> EdgeList:
    """``synonym_direction="directed"``: each direction found adds half its cosine (a mutual pair
    keeps its cosine, a one-way pair gets half), as the released code's two igraph entries do
    (short entities as neighbours: ``graph.synonym_candidates``)."""
    if len(rows) == 0:
        return EdgeList.empty()
    lo, hi = torch.minimum(rows.src, rows.dst), torch.maximum(rows.src, rows.dst)
    uniq, inv = torch.unique(lo * num_entities + hi, return_inverse=True)
    weight = torch.zeros(uniq.numel(), dtype=torch.float32).index_add_(0, inv, 0.5 * rows.weight.float())
    return EdgeList(uniq // num_entities, uniq % num_entities, weight)


def overwrite_relevance_by_direction(relevance: EdgeList, rows: SynonymRows, num_entities: int) -> tuple[EdgeList, int]:
    """``synonym_overwrites_relevance`` with directed synonyms, as the released code does it: a pair's
    relevance is two directed entries (each half the pair's weight here, as in
    ``directed_rows_to_edges``) and each synonym row overwrites only its own direction, so a
    one-way synonym pair keeps half its relevance weight and a mutual one keeps none. Returns the
    relevance edges and how many of them a synonym touched."""
    if len(relevance) == 0 or len(rows) == 0:
        return relevance, 0
    n = num_entities
    # directions of each entity pair that a synonym row covers: [P] unique pair keys, [P] counts
    pair = torch.minimum(rows.src, rows.dst) * n + torch.maximum(rows.src, rows.dst)
    # each direction once (rows hold a direction at most once), then per pair: 1 or 2 directions
    both = torch.cat([pair[rows.src < rows.dst].unique(), pair[rows.src > rows.dst].unique()])
    keys, covered = torch.unique(both, return_counts=True)  # [P] sorted pair keys, [P] in {1, 2}
    rel = torch.minimum(relevance.src, relevance.dst) * n + torch.maximum(relevance.src, relevance.dst)
    pos = torch.searchsorted(keys, rel).clamp(max=max(keys.numel() - 1, 0))
    hit = keys[pos] == rel
    kept_share = torch.where(hit, 1.0 - 0.5 * covered[pos].float(), torch.ones_like(rel, dtype=torch.float32))
    keep = kept_share > 0
    return (EdgeList(relevance.src[keep], relevance.dst[keep], (relevance.weight.float() * kept_share)[keep]),
            int(hit.sum()))


def entity_embedding_texts(keys: list[str], texts: list[str], cfg: GraphConfig) -> list[str]:
    """The strings embedded for the entity nodes: surface forms, or the canonical keys."""
    return list(keys) if cfg.entity_embedding_text == "canonical" else list(texts)
