"""The query side of AtomicRAG for a whole batch of questions at once.

question(s) → decomposition → seeds → propagation → top-k → sieve (→ the reader's context and
the reader, which the engine builds: ``engine.context_builder``). Every question and sub-question
of the batch is propagated together: one personalisation matrix, one batched propagation.
``BatchRetriever.run`` returns a ``RetrievalResult``: one ``QueryTrace`` per question with every
intermediate (sub-questions, seeds, top-k atoms with scores, sieve decisions), each question's
sieve-kept atoms and ranked documents, and the decomposition and sieve records the engine sums
into run-level counts and tokens.

A retriever is built from its own sections (retriever, decompose, sieve) and the shared
released-code settings (``fidelity``); the reader's budget and the LLM's size are not its
business (``engine.wiring`` builds one from a whole config).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from atomicrag.core.config import (
    AtomizerConfig,
    DecomposeConfig,
    FidelityConfig,
    RetrieverConfig,
    SieveConfig,
)
from atomicrag.core.needs import uses_atom_embeddings
from atomicrag.core.schemas import QueryTrace, Question, ScoredAtom
from atomicrag.graph.structure import AtomEntityGraph
from atomicrag.llm.protocol import request_deadline
from atomicrag.llm.sampling import default_sampling, stage_sampling
from atomicrag.prompts.released import for_fidelity
from atomicrag.prompts.released_replies import read_ner
from atomicrag.retrieve.context import unique_in_order
from atomicrag.retrieve.decompose import Decomposition, build_decomposer
from atomicrag.retrieve.hybrid import HybridRetriever, uses_hybrid
from atomicrag.retrieve.merge import passage_ranking
from atomicrag.retrieve.propagate import build_propagator, propagate_topk
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

    traces: list[QueryTrace]  # context and reader_documents are the engine's to fill
    decompositions: list[Decomposition]  # metrics and tokens of the decompose stage
    sieve: list[SieveResult]  # metrics and tokens of the sieve stage; .kept: the atoms the reader may read
    ranked_documents: list[list[str]]  # passage ids by retrieval rank, what a documents reader fills its budget from
    decomposed: list[bool]  # the question was split into sub-questions (its atoms then read by score)


class BatchRetriever:
    """Retrieval of a batch of questions over one graph: decomposition, seeds, propagation, sieve.

    ``retriever``, ``decompose`` and ``sieve`` are the stages' config sections; ``fidelity`` is
    the shared released-code settings (prompts, reply reading, budgets, request seed);
    ``sampling`` is the LLM's ``{"temperature", "max_tokens", "seed"}``
    (``llm.sampling.sampling(cfg.llm, fidelity=...)``; None: the LLM section's defaults), each
    LLM stage sending its own budget field in place of ``max_tokens``. ``spacy_model`` names the
    spaCy model of spaCy query entities (the atomizer's, so queries and passages name entities
    alike); ``link_instruction`` is glued before entity names embedded for linking (the released
    query-to-node instruction; None: none).
    """

    def __init__(
        self,
        retriever: RetrieverConfig,
        decompose: DecomposeConfig,
        sieve: SieveConfig,
        graph: AtomEntityGraph,
        embedder: Any,
        *,
        fidelity: FidelityConfig | None = None,
        sampling: Mapping[str, Any] | None = None,
        llm: Any = None,
        accountant: Any = None,
        spacy_model: str = AtomizerConfig.spacy_model,
        link_instruction: str | None = None,
    ) -> None:
        if graph.atom_embeddings is None:
            raise ValueError("the graph has no atom embeddings; build it with an embedder")
        if graph.atom_embeddings.shape[1] != getattr(embedder, "dim", graph.atom_embeddings.shape[1]):
            raise ValueError(
                f"embedder {embedder.name!r} has dim {embedder.dim} but the graph's atom embeddings have "
                f"dim {graph.atom_embeddings.shape[1]} (built with {graph.embedder_name!r})"
            )
        fid = fidelity if fidelity is not None else FidelityConfig()
        base = dict(sampling) if sampling is not None else default_sampling(fid)
        self.retriever = retriever
        self.fidelity = fid
        self.sampling = base
        self.spacy_model = spacy_model
        self.link_instruction = link_instruction
        self.graph = graph
        self.embedder = embedder
        self.llm = llm
        self.accountant = accountant
        if retriever.query_entities == "llm":  # says now, once, if this backend cannot honour the limit
            request_deadline(llm, "retriever.query_ner_timeout_s", retriever.query_ner_timeout_s)
        self.decomposer = build_decomposer(decompose, fid, llm, **stage_sampling(base, decompose.max_tokens))
        self.sieve = build_sieve(sieve, fid, llm, **stage_sampling(base, sieve.max_tokens))
        self.propagator = build_propagator(retriever)
        self.released = for_fidelity(fid)  # query NER with the released passage NER template
        self.uses_atom_embeddings = uses_atom_embeddings(retriever)
        self._ner_tokens: list[tuple[int, int]] = []  # per query of the last LLM NER batch
        self._ner_fallbacks: list[str | None] = []  # per query: why it has no entities (a released reading, a timeout)
        self._nlp: Any = None
        self._matcher: Any = None
        # BM25 seeding, passage nodes, fused passage ranking (retrieve/hybrid.py), when configured
        # Only for propagating retrievers: dense and qiter score atoms by their vectors and read no
        # seeds or propagation scores, so the levers of a preset they are merged over do not apply
        # (as entity_sim_threshold and damping do not).
        self.hybrid = (HybridRetriever(retriever, graph)
                       if uses_hybrid(retriever) and not self.uses_atom_embeddings else None)

    # -- stages ---------------------------------------------------------------------------
    def _timed(self, module: str) -> Any:
        if self.accountant is None:
            from contextlib import nullcontext

            return nullcontext()
        return self.accountant.time(module)

    def query_entities(self, queries: list[str]) -> list[list[str]]:
        if self.retriever.query_entities == "llm":
            return self._llm_entities(queries)
        if self._nlp is None:
            from atomicrag.atomize.nlp import load_spacy

            self._nlp = load_spacy(self.spacy_model, False)
        found = spacy_query_entities(self._nlp, queries)
        if self.retriever.query_entities in ("spacy_match", "spacy_idf", "spacy_cased"):
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
            if self.retriever.query_entities in ("spacy_idf", "spacy_cased"):  # hubs ("American") link nothing useful
                names = rare_entity_names(self.graph, self.retriever.query_entity_max_df)
            self._matcher = TermMatcher(names)
        m = self._matcher
        # spacy_cased: only where the question writes the name as a name (a capital or a digit).
        # The match is case-folded, so "the director of film X" found the graph's junk entity 'the"'
        # and the generic "Film", which then seeded with the full weight of the real name.
        cased = self.retriever.query_entities == "spacy_cased"
        return [[m.terms[t] for s, e, t in m.find(q) if not cased or _written_as_name(q[s:e])] for q in queries]

    def _llm_entities(self, queries: list[str]) -> list[list[str]]:
        """The paper's query NER: the passage NER prompt applied to the query."""
        from atomicrag.llm.protocol import ChatRequest
        from atomicrag.prompts import ner

        if self.llm is None:
            raise ValueError("retriever.query_entities=llm needs an LLM (llm=... not fake-less)")
        fid = self.fidelity
        released_reading = fid.extraction_replies == "released"  # free text, read the released way
        params = stage_sampling(self.sampling, self.retriever.query_ner_max_tokens)
        if fid.budgets == "released":
            params["max_tokens"] = None  # no cap sent, as released
        limit = self.retriever.query_ner_timeout_s or None  # the released query NER's asyncio.wait_for
        reqs = [
            ChatRequest(messages=ner.build_messages(q, released=self.released),
                        schema=None if released_reading else ner.SCHEMA, module="retrieve_ner",
                        deadline_s=limit, **params)
            for q in queries
        ]
        out: list[list[str]] = []
        self._ner_fallbacks = []
        results = self.llm.chat(reqs)
        for res in results:
            # a failed NER call leaves the query with atom seeds only; it is counted by the accountant,
            # and a timed-out one in the question's errors too (the released code drops its entities)
            if not res.ok:
                out.append([])
                self._ner_fallbacks.append(f"no reply within retriever.query_ner_timeout_s={limit:g} s, "
                                           "no entities" if getattr(res, "timed_out", False) else None)
            elif released_reading:  # an unreadable reply: no entities, as released, and a question error
                read = read_ner(res.text, res.finish_reason == "length")
                out.append(read.entities)
                self._ner_fallbacks.append(None if read.fallback is None
                                           else f"released reading found no entities: {read.fallback}")
            else:
                out.append(ner.parse(res.parsed))
                self._ner_fallbacks.append(None)
        self._ner_tokens = [(int(r.prompt_tokens or 0), int(r.completion_tokens or 0)) for r in results]
        return out

    def seeds(self, queries: list[str], q_emb: torch.Tensor) -> SeedSet:
        ents = self.query_entities(queries)
        extra = self.hybrid.seed_inputs(queries, q_emb) if self.hybrid is not None else {}
        return build_seeds(
            self.graph, q_emb, ents, lambda xs: self.embedder.encode(xs), self.retriever,
            self.link_instruction,
            **extra,
        )

    def propagate(self, seeds: SeedSet, q_emb: torch.Tensor, queries: list[str] | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k atoms of every query: (scores [Q, k], atom indices [Q, k])."""
        g = self.graph
        if self.hybrid is not None and self.hybrid.needs_scores:  # passage nodes / passage ranking
            return self.hybrid.propagate(self.propagator, seeds.matrix, queries or [], q_emb,
                                         self.retriever.top_k, self.retriever.query_batch)
        # only retrievers that score atoms by their vectors get the embeddings: without them
        # propagate_topk takes PPR's fused top-k path (the one benchmarks/retrieval.py times)
        emb = {"atom_embeddings": g.atom_embeddings, "query_embeddings": q_emb} if self.uses_atom_embeddings else {}
        vals, idx = propagate_topk(
            self.propagator, g.adjacency, seeds.matrix, g.num_entities, self.retriever.top_k,
            query_batch=self.retriever.query_batch, **emb,
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
        traces, ranked_documents = [], []
        offsets = [0]
        for qs in query_sets:
            offsets.append(offsets[-1] + len(qs))
        for i, q in enumerate(questions):
            all_cands = [a for per in candidates[i] for a in per]
            fused = self.hybrid.ranked_passages(range(offsets[i], offsets[i + 1])) if self.hybrid else None
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
                    retrieved_passages=fused or unique_in_order(passage_ranking(all_cands)),
                    cut={"decompose": decomps[i].cut_at} if decomps[i].cut_at is not None else {},
                )
            )
            ranked_documents.append(fused or passage_ranking(all_cands))
            for j in range(offsets[i], offsets[i + 1]):
                if j < len(self._ner_tokens):
                    traces[-1].add_tokens("retrieve_ner", *self._ner_tokens[j])
                if j < len(self._ner_fallbacks) and self._ner_fallbacks[j]:
                    traces[-1].errors.append(f"retrieve_ner: {self._ner_fallbacks[j]}")
        self._ner_tokens, self._ner_fallbacks = [], []
        return RetrievalResult(traces, decomps, sieved, ranked_documents, [len(qs) > 1 for qs in query_sets])
