"""The reader's context, assembled by the engine from what retrieval ranked.

Retrieval (``retrieve.query_batch.BatchRetriever``) returns each question's sieve-kept atoms and
ranked documents; what the reader reads of them is the reader's matter: the ranked documents
filled to its token budget, fewer for a small reader (``reader.context=documents``,
``retrieve/reader_context.py``), or the paper's atom list (``atoms``: ``reader.merge``,
``reader.context_order``, ``sieve.max_context``). Kept out of the retriever so that it is built
from its own sections, not from the reader's budget or the LLM's size.
"""
from __future__ import annotations

from atomicrag.core.config import ReaderConfig, SieveConfig
from atomicrag.core.schemas import ScoredAtom
from atomicrag.graph.structure import AtomEntityGraph
from atomicrag.retrieve.merge import ContextItem, merge_context
from atomicrag.retrieve.query_batch import RetrievalResult
from atomicrag.retrieve.reader_context import DocumentStore, build_document_context


class ReaderContextBuilder:
    """The reader's context over one graph's documents.

    ``fidelity_preset`` decides ``reader.context=auto`` (atoms under reference_code);
    ``llm_documents`` and ``reader_params_b`` (the LLM option's document limit and the reader's
    stated size) give the document limit when ``reader.max_documents`` is unset. The config
    sections are read when a context is built, not copied, so a changed section takes effect.
    """

    def __init__(self, reader: ReaderConfig, sieve: SieveConfig, graph: AtomEntityGraph, *,
                 fidelity_preset: str, llm_documents: int | None = None,
                 reader_params_b: float | None = None) -> None:
        self.reader = reader
        self.sieve = sieve
        self.graph = graph
        self.fidelity_preset = fidelity_preset
        self.llm_documents = llm_documents
        self.reader_params_b = reader_params_b
        self.titles: dict[str, str] = dict(graph.meta.get("passage_titles", {}))
        self._store: DocumentStore | None = None  # the graph's documents, grouped on first use

    def build(self, kept: list[ScoredAtom], ranked_docs: list[str], decomposed: bool = False) -> list[ContextItem]:
        """The context of one question from its sieve-kept atoms and its ranked documents
        (``decomposed``: the question was split, so its atoms are read by score, not sieve order)."""
        rc = self.reader
        if not rc.uses_documents(self.fidelity_preset):
            order = "sieve" if rc.context_order == "sieve" and not decomposed else "score"
            return merge_context(kept, mode=rc.merge, max_context=self.sieve.max_context,
                                 titles=self.titles, order=order)
        if self._store is None:
            self._store = DocumentStore(self.graph.atoms, self.titles)
        if self.sieve.name != "none":  # a document whose atoms the sieve dropped is not read
            keep = {a.passage_id for a in kept}
            ranked_docs = [d for d in ranked_docs if d in keep]
        return build_document_context(ranked_docs, kept, self._store, rc.context_tokens, rc.whole_doc_tokens,
                                      rc.neighbour_sentences, rc.atoms_first,
                                      self.documents_read())

    def documents_read(self) -> int | None:
        """The reader's document limit in force (0: the budget's), None when it reads atoms."""
        rc = self.reader
        if not rc.uses_documents(self.fidelity_preset):
            return None
        return rc.document_limit(self.llm_documents, self.reader_params_b)

    def fill(self, result: RetrievalResult) -> list[list[ContextItem]]:
        """The context of every question of ``result``, each also written into its question's
        trace with the document limit it was read under."""
        contexts = []
        for trace, sieved, ranked, decomposed in zip(result.traces, result.sieve, result.ranked_documents,
                                                     result.decomposed):
            ctx = self.build(sieved.kept, ranked, decomposed)
            trace.context = [c.to_dict() for c in ctx]
            trace.reader_documents = self.documents_read()
            contexts.append(ctx)
        return contexts
