"""The query side of AtomicRAG for a whole batch of questions at once.

question(s) → decomposition → seeds → propagation → top-k → sieve → merge (→ reader, in
``atomicrag.answer``). Every question and sub-question of the batch is propagated together:
one personalisation matrix, one batched propagation. ``BatchRetriever.run`` returns a
``RetrievalResult``: one ``QueryTrace`` per question with every intermediate (sub-questions,
seeds, top-k atoms with scores, sieve decisions, context), the contexts the reader consumes, and
the decomposition and sieve records the engine sums into run-level counts and tokens.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch

from atomicrag.core.config import Config
from atomicrag.core.needs import uses_atom_embeddings
from atomicrag.core.schemas import QueryTrace, Question, ScoredAtom
from atomicrag.embed.factory import query_to_node
from atomicrag.graph.structure import AtomEntityGraph
from atomicrag.llm.sampling import sampling
from atomicrag.prompts.released import for_fidelity
from atomicrag.prompts.released_replies import read_ner
from atomicrag.retrieve.context import unique_in_order
from atomicrag.retrieve.decompose import Decomposition, build_decomposer
from atomicrag.retrieve.hybrid import HybridRetriever, uses_hybrid
from atomicrag.retrieve.merge import ContextItem, merge_context, passage_ranking
from atomicrag.retrieve.propagate import build_propagator, propagate_topk
from atomicrag.retrieve.reader_context import DocumentStore, build_document_context
from atomicrag.retrieve.seeds import (
    SeedSet,
    build_seeds,
    merge_names,
    rare_entity_names,
    spacy_query_entities,
)
from atomicrag.retrieve.sieve import SieveResult, build_sieve

log = logging.getLogger("atomicrag")


def _written_as_name(span: str) -> bool:
    return any(c.isupper() or c.isdigit() for c in span)


@dataclass
class RetrievalResult:
    """What one batch of questions produced, per question, in the order asked."""

    traces: list[QueryTrace]
    contexts: list[list[ContextItem]]  # what the reader reads
    decompositions: list[Decomposition]  # metrics and tokens of the decompose stage
    sieve: list[SieveResult]  # metrics and tokens of the sieve stage


class BatchRetriever:
    def __init__(
        self, cfg: Config, graph: AtomEntityGraph, embedder: Any, llm: Any = None, accountant: Any = None
    ) -> None:
        if graph.atom_embeddings is None:
            raise ValueError("the graph has no atom embeddings; build it with an embedder")
        if graph.atom_embeddings.shape[1] != getattr(embedder, "dim", graph.atom_embeddings.shape[1]):
            raise ValueError(
                f"embedder {embedder.name!r} has dim {embedder.dim} but the graph's atom embeddings have "
                f"dim {graph.atom_embeddings.shape[1]} (built with {graph.embedder_name!r})"
            )
        self.cfg = cfg
        self.graph = graph
        self.embedder = embedder
        self.llm = llm
        self.accountant = accountant
        self.decomposer = build_decomposer(cfg.decompose, cfg.fidelity, llm,
                                           **sampling(cfg.llm, cfg.decompose.max_tokens, cfg.fidelity))
        self.sieve = build_sieve(cfg.sieve, cfg.fidelity, llm, **sampling(cfg.llm, cfg.sieve.max_tokens, cfg.fidelity))
        self.propagator = build_propagator(cfg.retriever)
        self.released = for_fidelity(cfg.fidelity)  # query NER with the released passage NER template
        self.uses_atom_embeddings = uses_atom_embeddings(cfg)
        self._ner_tokens: list[tuple[int, int]] = []  # per query of the last LLM NER batch
        self._ner_fallbacks: list[str | None] = []  # per query: why a released-read reply gave no entities
        self.titles: dict[str, str] = dict(graph.meta.get("passage_titles", {}))
        self._nlp: Any = None
        self._store: DocumentStore | None = None  # documents for the reader's context, built on first use
        self._matcher: Any = None
        # BM25 seeding, passage nodes, fused passage ranking (retrieve/hybrid.py), when configured
        # Only for propagating retrievers: dense and qiter score atoms by their vectors and read no
        # seeds or propagation scores, so the levers of a preset they are merged over do not apply
        # (as entity_sim_threshold and damping do not).
        self.hybrid = (HybridRetriever(cfg.retriever, graph)
                       if uses_hybrid(cfg.retriever) and not self.uses_atom_embeddings else None)

    # -- stages ---------------------------------------------------------------------------
    def _timed(self, module: str) -> Any:
        if self.accountant is None:
            from contextlib import nullcontext

            return nullcontext()
        return self.accountant.time(module)

    def query_entities(self, queries: list[str]) -> list[list[str]]:
        if self.cfg.retriever.query_entities == "llm":
            return self._llm_entities(queries)
        if self._nlp is None:
            from atomicrag.atomize.nlp import load_spacy

            self._nlp = load_spacy(self.cfg.atomizer.spacy_model, False)
        found = spacy_query_entities(self._nlp, queries)
        if self.cfg.retriever.query_entities in ("spacy_match", "spacy_idf", "spacy_cased"):
            found = [merge_names(f, m) for f, m in zip(found, self._graph_names(queries))]
        return found

    def _graph_names(self, queries: list[str]) -> list[list[str]]:
        """Graph entity names occurring in each query (token-trie match, longest first).

        Small NER models miss names in oddly cased questions ("When did Lothair Ii's mother
        die?"); the graph's own entity vocabulary finds them on word boundaries, case-folded.
        """
        if self._matcher is None:
            from atomicrag.atomize.matcher import TermMatcher

            names = self.graph.entity_texts
            if self.cfg.retriever.query_entities in ("spacy_idf", "spacy_cased"):  # hubs ("American") link nothing useful
                names = rare_entity_names(self.graph, self.cfg.retriever.query_entity_max_df)
            self._matcher = TermMatcher(names)
        m = self._matcher
        # spacy_cased: only where the question writes the name as a name (a capital or a digit).
        # The match is case-folded, so "the director of film X" found the graph's junk entity 'the"'
        # and the generic "Film", which then seeded with the full weight of the real name.
        cased = self.cfg.retriever.query_entities == "spacy_cased"
        return [[m.terms[t] for s, e, t in m.find(q) if not cased or _written_as_name(q[s:e])] for q in queries]

    def _llm_entities(self, queries: list[str]) -> list[list[str]]:
        """The paper's query NER: the passage NER prompt applied to the query."""
        from atomicrag.llm.protocol import ChatRequest
        from atomicrag.prompts import ner

        if self.llm is None:
            raise ValueError("retriever.query_entities=llm needs an LLM (llm=... not fake-less)")
        fid = self.cfg.fidelity
        released_reading = fid.extraction_replies == "released"  # free text, read the released way
        params = sampling(self.cfg.llm, self.cfg.retriever.query_ner_max_tokens, fid)
        if fid.budgets == "released":
            params["max_tokens"] = None  # no cap sent, as released
        reqs = [
            ChatRequest(messages=ner.build_messages(q, released=self.released),
                        schema=None if released_reading else ner.SCHEMA, module="retrieve_ner", **params)
            for q in queries
        ]
        out: list[list[str]] = []
        self._ner_fallbacks = []
        results = self.llm.chat(reqs)
        for res in results:
            # a failed NER call leaves the query with atom seeds only; it is counted by the accountant
            if not res.ok:
                out.append([])
                self._ner_fallbacks.append(None)
            elif released_reading:  # an unreadable reply: no entities, as released, and a question error
                read = read_ner(res.text, res.finish_reason == "length")
                out.append(read.entities)
                self._ner_fallbacks.append(read.fallback)
            else:
                out.append(ner.parse(res.parsed))
                self._ner_fallbacks.append(None)
        self._ner_tokens = [(int(r.prompt_tokens or 0), int(r.completion_tokens or 0)) for r in results]
        return out

    def seeds(self, queries: list[str], q_emb: torch.Tensor) -> SeedSet:
        ents = self.query_entities(queries)
        extra = self.hybrid.seed_inputs(queries, q_emb) if self.hybrid is not None else {}
        return build_seeds(
            self.graph, q_emb, ents, lambda xs: self.embedder.encode(xs), self.cfg.retriever,
            query_to_node(self.cfg.embedder, self.cfg.fidelity),
            **extra,
        )

    def propagate(self, seeds: SeedSet, q_emb: torch.Tensor, queries: list[str] | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k atoms of every query: (scores [Q, k], atom indices [Q, k])."""
        g = self.graph
        if self.hybrid is not None and self.hybrid.needs_scores:  # passage nodes / passage ranking
            return self.hybrid.propagate(self.propagator, seeds.matrix, queries or [], q_emb,
                                         self.cfg.retriever.top_k, self.cfg.retriever.query_batch)
        # only retrievers that score atoms by their vectors get the embeddings: without them
        # propagate_topk takes PPR's fused top-k path (the one benchmarks/retrieval.py times)
        emb = {"atom_embeddings": g.atom_embeddings, "query_embeddings": q_emb} if self.uses_atom_embeddings else {}
        vals, idx = propagate_topk(
            self.propagator, g.adjacency, seeds.matrix, g.num_entities, self.cfg.retriever.top_k,
            query_batch=self.cfg.retriever.query_batch, **emb,
        )
        if self.hybrid is not None:  # passage_ranking=bridge ranks from the top-k atoms
            self.hybrid.rank_topk(vals, idx)
        return vals, idx

    def _scored(self, scores: torch.Tensor, idx: torch.Tensor) -> list[ScoredAtom]:
        out = []
        for s, i in zip(scores.tolist(), idx.tolist()):
            a = self.graph.atoms[i]
            out.append(ScoredAtom(a.id, a.text, float(s), a.passage_id, a.chunk_id, list(a.entities)))
        return out

    def reader_context(self, kept: list[ScoredAtom], ranked_docs: list[str], decomposed: bool = False
                       ) -> list[ContextItem]:
        """The reader's context: ranked documents by token budget (reader.context=documents), or
        the paper's atom list (atoms; reader.merge, reader.context_order and sieve.max_context)."""
        rc = self.cfg.reader
        if not rc.uses_documents(self.cfg.fidelity.preset):
            order = "sieve" if rc.context_order == "sieve" and not decomposed else "score"
            return merge_context(kept, mode=rc.merge, max_context=self.cfg.sieve.max_context,
                                 titles=self.titles, order=order)
        if self._store is None:
            self._store = DocumentStore(self.graph.atoms, self.titles)
        if self.cfg.sieve.name != "none":  # a document whose atoms the sieve dropped is not read
            keep = {a.passage_id for a in kept}
            ranked_docs = [d for d in ranked_docs if d in keep]
        return build_document_context(ranked_docs, kept, self._store, rc.context_tokens, rc.whole_doc_tokens,
                                      rc.neighbour_sentences, rc.atoms_first,
                                      self.documents_read())

    def documents_read(self) -> int | None:
        """The reader's document limit in force (0: the budget's), None when it reads atoms."""
        rc = self.cfg.reader
        if not rc.uses_documents(self.cfg.fidelity.preset):
            return None
        return rc.document_limit(self.cfg.llm.reader_documents, self.cfg.llm.params_b)

    # -- the batch ------------------------------------------------------------------------
    def run(self, questions: list[Question]) -> RetrievalResult:
        texts = [q.question for q in questions]
        with self._timed("decompose"):
            decomps = self.decomposer.decompose(texts)
        query_sets = [d.queries for d in decomps]
        flat = [q for qs in query_sets for q in qs]
        owner = [i for i, qs in enumerate(query_sets) for _ in qs]
        with self._timed("retrieve"):
            q_emb = self.embedder.encode(flat, is_query=True)  # [Qf, d]
            seeds = self.seeds(flat, q_emb)
            top_scores, top_idx = self.propagate(seeds, q_emb, flat)  # [Qf, k] each
        per_query = [self._scored(top_scores[j], top_idx[j]) for j in range(len(flat))]
        candidates: list[list[list[ScoredAtom]]] = [[] for _ in questions]
        for j, i in enumerate(owner):
            candidates[i].append(per_query[j])
        with self._timed("sieve"):
            sieved = self.sieve.sieve(texts, query_sets, candidates)
        traces, contexts = [], []
        offsets = [0]
        for qs in query_sets:
            offsets.append(offsets[-1] + len(qs))
        for i, q in enumerate(questions):
            all_cands = [a for per in candidates[i] for a in per]
            fused = self.hybrid.ranked_passages(range(offsets[i], offsets[i + 1])) if self.hybrid else None
            ctx = self.reader_context(sieved[i].kept, fused or passage_ranking(all_cands),
                                      decomposed=len(query_sets[i]) > 1)
            traces.append(
                QueryTrace(
                    question_id=q.id,
                    question=q.question,
                    sub_questions=decomps[i].sub_question_texts,
                    decomposition=decomps[i].to_dict(),
                    seeds=[
                        {"query": flat[j], "entities": seeds.query_entities[j],
                         "entity_seeds": seeds.describe(j, self.graph)}
                        for j in range(offsets[i], offsets[i + 1])
                    ],
                    candidates=[[a.to_dict() for a in per] for per in candidates[i]],
                    sieve=sieved[i].trace(),
                    context=[c.to_dict() for c in ctx],
                    retrieved_passages=fused or unique_in_order(passage_ranking(all_cands)),
                    cut={"decompose": decomps[i].cut_at} if decomps[i].cut_at is not None else {},
                    reader_documents=self.documents_read(),
                )
            )
            contexts.append(ctx)
            for j in range(offsets[i], offsets[i + 1]):
                if j < len(self._ner_tokens):
                    traces[-1].add_tokens("retrieve_ner", *self._ner_tokens[j])
                if j < len(self._ner_fallbacks) and self._ner_fallbacks[j]:
                    traces[-1].errors.append(f"retrieve_ner: released reading found no entities: "
                                             f"{self._ner_fallbacks[j]}")
        self._ner_tokens, self._ner_fallbacks = [], []
        return RetrievalResult(traces, contexts, decomps, sieved)
