"""An index: one graph (or, for a passage retriever, one chunk list) per corpus.

A dataset with several corpora (Graph-Bench Novel: 20 novels, each its own corpus) gets one
index per corpus, and each question is answered against its own (``Question.corpus``), as the
authors' runner does. A dataset without corpus names is one corpus, named ``""``.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from atomicrag.core.schemas import Chunk, Passage, Question
from atomicrag.graph.incremental import IndexedGraph

SINGLE = ""  # the corpus name of a dataset whose passages name none


def corpus_of(passage: Passage) -> str:
    return passage.corpus or SINGLE


def group_chunks(chunks: list[Chunk], passages: Iterable[Passage]) -> dict[str, list[Chunk]]:
    """Chunks per corpus, in corpus order of first appearance, chunk order kept."""
    owner = {p.id: corpus_of(p) for p in passages}
    out: dict[str, list[Chunk]] = {}
    for c in chunks:
        out.setdefault(owner.get(c.passage_id, SINGLE), []).append(c)
    return out


@dataclass
class CorpusIndex:
    """``graphs``: corpus -> graph (graph retrievers); ``chunks``: corpus -> chunks (always)."""

    chunks: dict[str, list[Chunk]]
    graphs: dict[str, IndexedGraph] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.chunks)

    @classmethod
    def single(cls, indexed: IndexedGraph) -> CorpusIndex:
        return cls(chunks={SINGLE: []}, graphs={SINGLE: indexed})

    def route(self, questions: list[Question]) -> dict[str, list[int]]:
        """Question positions per corpus. With one corpus every question goes to it; with several,
        ``question.corpus`` must name one of them."""
        names = self.names
        if len(names) == 1:
            return {names[0]: list(range(len(questions)))} if questions else {}
        out: dict[str, list[int]] = {}
        for i, q in enumerate(questions):
            if q.corpus not in self.chunks:
                raise ValueError(
                    f"question {q.id!r}: corpus {q.corpus!r} is not one of the {len(names)} indexed corpora "
                    f"({', '.join(map(repr, names[:5]))}{', ...' if len(names) > 5 else ''}); a dataset with "
                    f"several corpora needs Question.corpus on every question")
            out.setdefault(q.corpus, []).append(i)
        return out

    def stats(self, routed: dict[str, list[int]] | None = None) -> dict[str, dict[str, Any]]:
        """Per corpus: chunk count, questions routed to it and (graph retrievers) graph statistics."""
        from atomicrag.graph.stats import graph_stats

        out: dict[str, dict[str, Any]] = {}
        for name, chunks in self.chunks.items():
            row: dict[str, Any] = {"chunks": len(chunks)}
            if routed is not None:
                row["questions"] = len(routed.get(name, []))
            if name in self.graphs:
                graph = self.graphs[name].graph
                row.update(graph_stats(graph))
                merged = graph.meta.get("atomize_stats", {}).get("window_repeats_merged")
                if merged is not None:  # sentences repeated by overlapping windows, kept once
                    row["window_repeats_merged"] = merged
            out[name] = row
        return out

    def atomize_stats(self) -> dict[str, Any]:
        """This run's atomization counts (``chunks``, ``failed_chunks``, ...) summed over the corpora
        (``failures.summarize_run``); empty when nothing was atomized."""
        out: dict[str, Any] = {}
        for g in self.graphs.values():
            for k, v in g.graph.meta.get("atomize_stats", {}).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out[k] = out.get(k, 0) + v
        return out


def combined_stats(per_corpus: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Graph statistics of the disjoint union of the per-corpus graphs (exact: counts add up,
    degree and clustering are node-weighted, containment per atom atom-weighted)."""
    rows = [r for r in per_corpus.values() if "nodes" in r]
    if not rows:
        return {}
    if len(rows) == 1:
        return {k: v for k, v in rows[0].items() if k not in ("chunks", "questions")}
    total = {k: sum(r[k] for r in rows) for k in ("nodes", "entities", "atoms", "edges", "related_edges",
                                                 "synonym_edges", "containment_edges", "unique_pairs",
                                                 "atoms_without_entities", "isolated_entities")}
    n, na = total["nodes"], total["atoms"]
    total["avg_degree"] = 2.0 * total["unique_pairs"] / n if n else 0.0
    total["avg_clustering"] = sum(r["avg_clustering"] * r["nodes"] for r in rows) / n if n else 0.0
    total["containment_per_atom"] = total["containment_edges"] / na if na else 0.0
    total["max_entity_degree"] = max(r["max_entity_degree"] for r in rows)
    total["corpora"] = len(rows)
    return total
