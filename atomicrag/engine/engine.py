"""The one index/query engine of the harness (``pipeline.run_one``) and the library (``AtomicRAG``).

    engine = Engine(cfg, models, accountant, cache_dir=...)   # cache_dir=None: no stage cache
    index = engine.index_passages(passages)                     # chunked; one graph per corpus
    batch = engine.retrieve(index, questions)                   # routed by Question.corpus
    outputs = engine.answer(batch, "precise")                   # precise | abstract | none

Indexing is atomize → ``graph.build.update_graph``: a build is an update from empty, the
library's ``insert``/``delete`` are updates of a previous graph (``Engine.update``), and the
stage cache (``graph.cached_build``: atomize and graph folders keyed by their inputs) is an option
of the engine, not a second path. Querying runs ``retrieve.query_batch.BatchRetriever`` per corpus (graph
retrievers; ``engine.wiring`` builds it from its sections) and assembles the reader's context from
the atoms and documents it ranked (``engine.context_builder``), or runs the passage retriever of
the registry; then the reader.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from atomicrag.core.config import Config
from atomicrag.core.needs import INDEX_STAGES, QUERY_STAGES, needs, needs_llm
from atomicrag.core.registry import RETRIEVERS
from atomicrag.core.schemas import Atom, AtomizeResult, Chunk, Passage, QueryTrace, Question, Triple
from atomicrag.engine.corpus_index import CorpusIndex, group_chunks
from atomicrag.graph.incremental import IndexedGraph
from atomicrag.llm.sampling import sampling
from atomicrag.prompts import released as released_prompts

log = logging.getLogger("atomicrag")


class Models(Protocol):
    """Where the engine gets its models: built on first use (``ConfigModels``) or the user's."""

    @property
    def embedder(self) -> Any: ...

    @property
    def llm(self) -> Any: ...


class ConfigModels:
    """The config's embedder and LLM, each built on first use; ``close()`` stops what was built."""

    def __init__(self, cfg: Config, accountant: Any = None) -> None:
        self.cfg, self.accountant = cfg, accountant
        self._embedder: Any = None
        self._llm: Any = None

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from atomicrag.embed.factory import build_embedder

            self._embedder = build_embedder(self.cfg.embedder, self.cfg.fidelity)
        return self._embedder

    @property
    def llm(self) -> Any:
        if self._llm is None:
            from atomicrag.llm.factory import build_llm

            self._llm = build_llm(self.cfg.llm, self.cfg.paths, self.accountant,
                                  accept_empty=self.cfg.fidelity.empty_replies == "accepted")
        return self._llm

    @property
    def llm_built(self) -> bool:
        return self._llm is not None

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None


@dataclass
class Batch:
    """One retrieval batch: a trace and a context per question, plus the stage records."""

    questions: list[Question]
    traces: list[QueryTrace]
    contexts: list[list[Any]]
    routed: dict[str, list[int]] = field(default_factory=dict)
    decompositions: list[Any] = field(default_factory=list)  # retrieve.decompose.Decomposition
    sieve: list[Any] = field(default_factory=list)  # retrieve.sieve.SieveResult
    outputs: list[Any] = field(default_factory=list)  # answer.readers.ReaderOutput (after answer())
    resumed_answers: int = 0  # answers answer() took from its checkpoint instead of the reader


class Engine:
    def __init__(self, cfg: Config, models: Models | None = None, accountant: Any = None, *,
                 cache_dir: str | Path | None = None, dataset_name: str = "", progress: Any = None) -> None:
        from atomicrag.llm.accounting import Accountant

        self.cfg = cfg
        self.accountant = accountant if accountant is not None else Accountant()
        self.models = models if models is not None else ConfigModels(cfg, self.accountant)
        self.cache_dir = cache_dir  # None: no stage cache (the library keeps its index itself)
        self.dataset_name = dataset_name
        self.progress = progress  # callable(stage, done, total) or None
        # corpus -> (graph, BatchRetriever, ReaderContextBuilder), built again for a new graph
        self._retrievers: dict[str, tuple[Any, Any, Any]] = {}

    def _timed(self, module: str) -> Any:
        return self.accountant.time(module)

    def llm_for(self, stages: tuple[str, ...]) -> Any:
        """The LLM when one of ``stages`` declares it needs one, else None (no model is built)."""
        return self.models.llm if needs_llm(self.cfg, stages) else None

    @property
    def uses_graph(self) -> bool:
        return needs(self.cfg, "graph", ("retriever",))

    # ------------------------------------------------------------------ indexing
    def atomizer(self, **deps: Any) -> Any:
        from atomicrag.atomize import atomizer_fidelity, build_atomizer

        llm = self.llm_for(INDEX_STAGES)
        deps.setdefault("released_prompts", released_prompts.for_fidelity(self.cfg.fidelity))
        deps.update(atomizer_fidelity(self.cfg.fidelity))
        return build_atomizer(self.cfg.atomizer, llm=llm, **sampling_deps(self.cfg, llm), **deps)

    def atomize_slices(self, chunks: list[Chunk], step: int | None = None,
                       **deps: Any) -> Iterator[tuple[list[Chunk], AtomizeResult]]:
        """Atomize ``chunks`` (no cache), about ``step`` chunks per call so progress can move; a
        passage's chunks always share a call (``passage_slices``)."""
        from atomicrag.atomize.base import passage_slices

        if not chunks:
            return
        atomizer = self.atomizer(**deps)
        done = 0
        with self._timed("atomize"):
            for part in passage_slices(chunks, step or len(chunks)):
                yield part, atomizer.atomize(part)
                done += len(part)
                if self.progress is not None:
                    self.progress("atomize", done, len(chunks))

    def update(self, prev: IndexedGraph | None, atoms: list[Atom], triples: list[Triple],
               meta: dict[str, Any] | None = None) -> IndexedGraph:
        """The graph of ``atoms``/``triples`` reusing ``prev`` (None: a build)."""
        from atomicrag.graph.build import update_graph

        self._retrievers.clear()
        with self._timed("graph"):
            return update_graph(prev, atoms, triples, self.models.embedder, self.cfg.graph,
                                progress=self.progress, meta=meta)

    def index_chunks(self, chunks: list[Chunk], corpus: str = "") -> IndexedGraph:
        """The graph of one corpus's chunks: through the stage cache when the engine has one."""
        if self.cache_dir is not None:
            from atomicrag.graph.cached_build import index_corpus

            llm = self.llm_for(INDEX_STAGES)
            atomizer = self.atomizer() if chunks else None
            with self._timed("index"):
                graph = index_corpus(chunks, self.cfg, llm, self.models.embedder, self.cache_dir,
                                     self.dataset_name, atomizer=atomizer)
            graph.meta.setdefault("corpus", corpus)
            return IndexedGraph(graph, None)  # a cached graph keeps no synonym rows: a later update recomputes them
        if not chunks:
            raise ValueError(f"cannot index corpus {corpus!r} of {self.dataset_name!r}: it has no chunks")
        parts = list(self.atomize_slices(chunks))
        res = parts[0][1]
        meta = {"failed_chunks": len(res.failures), "atomize_llm_calls": res.llm_calls, "corpus": corpus}
        return self.update(None, res.atoms, res.triples, meta)

    def index_passages(self, passages: list[Passage], chunks: list[Chunk] | None = None,
                       questions: list[Question] | None = None) -> CorpusIndex:
        """Chunk ``passages`` (unless ``chunks`` are given) and index each corpus on its own.

        With ``questions`` and several corpora, only the corpora they ask about are indexed (a
        ``dataset.limit`` run over Graph-Bench Novel builds the novels it needs, not all 20)."""
        if chunks is None:
            from atomicrag.data.token_windows import chunk_passages

            with self._timed("chunk"):
                chunks = chunk_passages(passages, self.cfg.dataset)
        groups = group_chunks(chunks, passages)
        if not groups:
            raise ValueError(f"cannot index dataset {self.dataset_name!r}: the corpus has no chunks")
        if questions is not None and len(groups) > 1:
            CorpusIndex(chunks=groups).route(questions)  # every question names a known corpus
            asked = {q.corpus for q in questions}
            groups = {name: part for name, part in groups.items() if name in asked}
        index = CorpusIndex(chunks=groups)
        if self.uses_graph:
            for i, (name, part) in enumerate(groups.items()):
                if len(groups) > 1:
                    log.info("indexing corpus %d/%d %r (%d chunks)", i + 1, len(groups), name, len(part))
                index.graphs[name] = self.index_chunks(part, name)
        return index

    # ------------------------------------------------------------------ querying
    def query_stages(self, index: CorpusIndex, corpus: str) -> tuple[Any, Any]:
        """The ``BatchRetriever`` over ``corpus``'s graph and the ``ReaderContextBuilder`` of its
        documents (kept while the graph object stays the same)."""
        graph = index.graphs[corpus].graph
        held = self._retrievers.get(corpus)
        if held is None or held[0] is not graph:
            from atomicrag.engine import wiring

            retriever = wiring.batch_retriever(self.cfg, graph, self.models.embedder, self.llm_for(QUERY_STAGES),
                                               self.accountant)
            self._retrievers[corpus] = held = (graph, retriever, wiring.context_builder(self.cfg, graph))
        return held[1], held[2]

    def retrieve(self, index: CorpusIndex, questions: list[Question]) -> Batch:
        """Traces and contexts of every question, each answered against its own corpus."""
        n = len(questions)
        batch = Batch(questions, [None] * n, [None] * n, index.route(questions),  # type: ignore[list-item]
                      [None] * n, [None] * n)
        for corpus, pos in batch.routed.items():
            group = [questions[i] for i in pos]
            t0 = time.perf_counter()
            if self.uses_graph:
                retriever, context_builder = self.query_stages(index, corpus)
                res = retriever.run(group)
                contexts = context_builder.fill(res)  # the reader's context, also into each trace
                traces, decomps, sieved = res.traces, res.decompositions, res.sieve
            else:  # a passage retriever (dense_passage): ranks the corpus's chunks
                with self._timed("retrieve"):
                    traces, contexts = RETRIEVERS.get(self.cfg.retriever.name)(
                        group, index.chunks[corpus], self.models.embedder, self.cfg)
                decomps, sieved = [None] * len(group), [None] * len(group)
            share = (time.perf_counter() - t0) / max(len(group), 1)
            for j, i in enumerate(pos):
                traces[j].seconds["retrieve"] = round(share, 6)
                batch.traces[i], batch.contexts[i] = traces[j], contexts[j]
                batch.decompositions[i], batch.sieve[i] = decomps[j], sieved[j]
        return batch

    def reader(self, kind: str) -> Any:
        """The configured reader of ``kind`` (precise | abstract) over the engine's LLM."""
        from atomicrag.answer.readers import build_reader

        return build_reader(kind, self.models.llm, self.cfg.reader,
                            released=released_prompts.for_fidelity(self.cfg.fidelity),
                            uncapped=self.cfg.fidelity.budgets == "released",
                            **sampling(self.cfg.llm, self.cfg.reader.max_tokens, self.cfg.fidelity))

    def answer(self, batch: Batch, kind: str, *, checkpoint: str | Path | None = None) -> list[Any]:
        """Reader outputs for every question of ``batch`` (``kind``: precise | abstract | none).

        ``checkpoint``: a JSONL file of answers (``engine.answer_checkpoint``); answers found there
        for the same question and request are reused (counted in ``batch.resumed_answers``), the
        rest are asked in chunks, each chunk's answers appended as it finishes."""
        if kind == "none" or not batch.questions:
            return []
        reader = self.reader(kind)
        questions = [q.question for q in batch.questions]
        t0 = time.perf_counter()
        with self._timed("answer"):
            if checkpoint is None:
                outputs = reader.answer(questions, batch.contexts)
            else:
                outputs = self._answer_resuming(reader, kind, batch, Path(checkpoint))
        self.record_answers(batch, reader, outputs, time.perf_counter() - t0)
        return outputs

    def answer_stream(self, batch: Batch, kind: str) -> Iterator[str]:
        """The answer to a batch of one question, streamed: yields the reader's reply as it is
        written (``answer.streaming``); the batch's trace and outputs are filled as ``answer`` fills them."""
        from atomicrag.answer.streaming import stream_answer

        if len(batch.questions) != 1:
            raise ValueError(f"streaming answers one question at a time, not {len(batch.questions)}")
        reader = self.reader(kind)
        t0 = time.perf_counter()
        with self._timed("answer"):
            output = yield from stream_answer(reader, batch.questions[0].question, batch.contexts[0])
        self.record_answers(batch, reader, [output], time.perf_counter() - t0)

    def record_answers(self, batch: Batch, reader: Any, outputs: list[Any], seconds: float) -> None:
        """Reader outputs into the batch's traces: answers, failures, answers cut by the budget, tokens."""
        share = seconds / max(1, len(batch.questions))
        for t, o in zip(batch.traces, outputs):
            t.answer, t.raw_answer = o.answer, o.raw
            t.seconds["answer"] = round(share, 6)
            if o.failed:
                t.errors.append(f"reader: {o.error}")
            if o.truncated:  # cut by reader.max_tokens: reported beside failures, not as one
                t.cut["answer"] = reader.max_tokens
        batch.outputs = outputs
        fill_tokens(batch)

    def _answer_resuming(self, reader: Any, kind: str, batch: Batch, path: Path) -> list[Any]:
        from atomicrag.answer.readers import ReaderOutput
        from atomicrag.engine import answer_checkpoint

        llm = self.cfg.llm
        cp = answer_checkpoint.AnswerCheckpoint(path, scope={
            "reader": kind, "reader_cfg": dataclasses.asdict(self.cfg.reader),
            "llm": [llm.name, llm.model, llm.model_path]})
        questions = [q.question for q in batch.questions]
        keys = [cp.key(q.id, r) for q, r in zip(batch.questions, reader.requests(questions, batch.contexts))]
        outputs: list[Any] = [None] * len(questions)
        for i, key in enumerate(keys):
            stored = cp.get(key)
            if stored is not None:  # new tokens: none, as for an LLM cache hit
                outputs[i] = ReaderOutput(**{**stored, "prompt_tokens": 0, "completion_tokens": 0})
        batch.resumed_answers = sum(o is not None for o in outputs)
        if batch.resumed_answers:
            log.info("answer: reused %d of %d answers from %s", batch.resumed_answers, len(questions), path)
        todo = [i for i, o in enumerate(outputs) if o is None]
        for start in range(0, len(todo), answer_checkpoint.CHUNK):
            part = todo[start:start + answer_checkpoint.CHUNK]
            got = reader.answer([questions[i] for i in part], [batch.contexts[i] for i in part])
            for i, out in zip(part, got):
                outputs[i] = out
            cp.add([(keys[i], batch.questions[i].id, out) for i, out in zip(part, got)])
        return outputs


def sampling_deps(cfg: Config, llm: Any) -> dict[str, Any]:
    """Sampling for an LLM atomizer (temperature and seed; its completion budgets are atomizer fields)."""
    if llm is None:
        return {}
    s = sampling(cfg.llm, fidelity=cfg.fidelity)
    return {"temperature": s["temperature"], "seed": s["seed"]}


def fill_tokens(batch: Batch) -> None:
    """Per-question tokens by module from the stage records (new tokens; cache hits count 0)."""
    for i, t in enumerate(batch.traces):
        rows: list[tuple[str, Any]] = []
        d = batch.decompositions[i] if batch.decompositions else None
        if d is not None:
            rows.append(("decompose", d))
        s = batch.sieve[i] if batch.sieve else None
        if s is not None:
            rows += [("sieve", dec) for dec in s.decisions]
        if batch.outputs:
            rows.append(("answer", batch.outputs[i]))
        for module, rec in rows:
            t.add_tokens(module, rec.prompt_tokens, rec.completion_tokens)

