"""What an ``AtomicRAG`` index reports about itself: per-document failures, statistics, exports."""
from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from atomicrag.library.serialised import serialised
from atomicrag.library.types import DocumentReport


class IndexReports:
    """Mixed into ``AtomicRAG``, which holds ``_docs``, ``_states``, ``_indexed``, ``_embedder``,
    ``accountant`` and ``graph``."""

    _docs: dict[str, Any]
    _states: dict[str, Any]
    _indexed: Any
    _embedder: Any
    accountant: Any
    graph: Any

    def report(self, doc_ids: Iterable[str] | None = None) -> list[DocumentReport]:
        """Per document (``doc_ids``, or every one in index order): its chunks and the chunks
        that failed to atomize, with the stage and reason of each (``retry_failed`` redoes them)."""
        ids = list(self._docs) if doc_ids is None else [str(i) for i in doc_ids]
        missing = [i for i in ids if i not in self._states]
        if missing:
            raise KeyError(f"unknown document id(s): {', '.join(map(repr, missing[:10]))}")
        return [DocumentReport(i, self._states[i].chunks, tuple(self._states[i].failures)) for i in ids]

    @property
    def failures(self) -> list[DocumentReport]:
        """The documents with at least one failed chunk (empty: the index is complete)."""
        return [r for r in self.report() if r.failures]

    @serialised
    def stats(self) -> dict[str, Any]:
        """Corpus and graph statistics (paper Table 3/6 columns), update timings and LLM usage."""
        out: dict[str, Any] = {
            "documents": len(self._docs), "chunks": sum(s.chunks for s in self._states.values()),
            "failed_chunks": sum(len(s.failures) for s in self._states.values()),
            "embedder": self._embedder.name if self._embedder is not None else None,
        }
        if self._indexed is not None:
            from atomicrag.engine.api import graph_stats

            g = self._indexed.graph
            out.update(graph_stats(g))
            out["timings"] = copy.deepcopy(g.meta.get("timings", {}))
            out["last_update"] = copy.deepcopy(g.meta.get("last_update", {}))
        acc = self.accountant.to_dict()
        out["llm_usage"] = acc.get("total", {})
        return out

    @serialised
    def export(self, path: str | Path | None = None, *, embeddings: bool = False) -> dict[str, Any]:
        """The index as plain data (documents, atoms, entities, edges per type); written to ``path``
        as GraphML (``.graphml``: nodes with text, edges with their type) or JSON (``.json``).

        An export for other tools (no reload: ``save``/``load`` are the storage format).
        """
        from atomicrag.library.export import export_graph

        return export_graph(self._docs, self.graph, path, embeddings=embeddings)
