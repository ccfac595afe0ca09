"""The library face: ``AtomicRAG`` indexes documents, updates the index in place, answers questions.

    rag = AtomicRAG({"atomizer": {"name": "sentence"}, "reader": {"name": "none"}})
    rag.index(["Marie Curie was born in Warsaw.", {"text": "...", "doc_id": "d2", "title": "..."}])
    rag.insert([...]); rag.delete(["d2"])
    result = rag.query("Where was Marie Curie born?")        # QueryResult; a list of str -> list
    rag.save("my_index"); rag = AtomicRAG.load("my_index")

Indexing and querying run the research harness's engine (``atomicrag.engine.Engine``: the same
atomize → ``update_graph`` path, query engine and reader as ``pipeline.run_one``), so the library
answers exactly as the pipeline does under the same config. The index keeps each document's
atomization, so ``insert``/``delete`` atomize only new documents, embed only unseen texts and
update synonym edges locally (``graph.incremental``); a build is an update from empty, so the
result equals a fresh ``index`` over the same documents in the same order.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atomicrag.core.compose import load_config
from atomicrag.core.config import Config
from atomicrag.core.progress import reporting
from atomicrag.core.registry import STORES
from atomicrag.library.api_async import AsyncQueries
from atomicrag.library.api_reports import IndexReports
from atomicrag.library.doc_states import CORPUS_LEVEL_ATOMIZERS, atomize_documents
from atomicrag.library.io import Snapshot
from atomicrag.library.query_result import query_result
from atomicrag.library.reopen import check_reopen_embedder, reopen_config
from atomicrag.library.serialised import serialised
from atomicrag.library.types import (
    AnswerStream,
    DocState,
    Document,
    Progress,
    ProgressFn,
    QueryResult,
    check_questions,
    normalize_documents,
    question_list,
)
from atomicrag.library.user_paths import library_paths

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger("atomicrag")

_LOADING = threading.local()  # set while load() constructs: no up-front answering warning then


@contextmanager
def no_answering_warning() -> Iterator[None]:
    """``AtomicRAG(...)`` built inside logs no up-front answering warning: ``load`` (a loaded
    index may never answer) and the CLI's ``index`` (``index()`` raises the same text at once)."""
    _LOADING.active = True
    try:
        yield
    finally:
        _LOADING.active = False


class AtomicRAG(AsyncQueries, IndexReports):
    """An Atom-Entity Graph index over a document collection.

    ``config``: a ``Config``, a dict, a JSON/YAML file path or None (defaults), validated by
    ``load_config`` (unknown keys and bad values raise ``ValueError``; ``ATOMICRAG_<GROUP>__<FIELD>``
    environment variables apply last). ``llm``/``embedder``: your own model objects (see
    ``atomicrag.library.adapters``); without them the config's backends are built when first needed.
    ``progress``: ``callback(stage, done, total)``, True for tqdm bars, False for silence, None for
    bars on a terminal.
    """

    def __init__(self, config: Config | dict | str | Path | None = None, *, llm: Any = None, embedder: Any = None,
                 progress: bool | ProgressFn | None = None) -> None:
        from atomicrag.engine.api import Accountant
        from atomicrag.library.adapters.dispatch import as_embedder, as_llm

        self.config: Config = load_config(config)
        self._lock = threading.RLock()  # see _serialised
        self._versions: dict[str, str | None] = {}  # index folder -> the version this object knows there
        self.accountant = Accountant()
        self._progress = Progress(progress)
        self._llm = None if llm is None else self._account(as_llm(llm))
        self._llm_owned = False  # built from the config here, so close() closes it
        self._embedder = as_embedder(embedder)
        self._docs: dict[str, Document] = {}
        self._states: dict[str, DocState] = {}
        self._indexed: Any = None  # graph.incremental.IndexedGraph, None while empty
        # query-time filters (where=...): the filtered documents' graph, per filter, for this _indexed
        self._filtered: dict[tuple[str, ...], tuple[Any, Any]] = {}
        self._warned_fake = False
        from atomicrag.engine import Engine

        # the engine gets its models from this object (yours, or the config's on first use)
        self._engine = Engine(self.config, self, self.accountant,
                            progress=self._progress if self._progress.active else None)
        # a new index warns now; a loaded one (stats, docs, delete need no LLM) when it first answers
        self._check_answering(warn=not getattr(_LOADING, "active", False))

    def _check_answering(self, *, warn: bool) -> list[str]:
        """What answering would fail on (library.readiness); a warning when ``warn``. Your own
        ``llm=`` object is not checked."""
        if self._llm is not None:
            return []
        from atomicrag.library.readiness import answering_problems, describe

        problems = answering_problems(self.config)
        if problems and warn:
            log.warning(describe(problems))
        return problems

    # ------------------------------------------------------------------ models
    def _account(self, llm: Any) -> Any:
        from atomicrag.engine.api import AccountedLLM

        # token accounting needs a ``model`` attribute; a bare chat() object is used as it is
        return AccountedLLM(llm, self.accountant) if isinstance(getattr(llm, "model", None), str) else llm

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from atomicrag.engine.api import build_embedder

            if self.config.embedder.name == "fake":  # the research default; fine for tests, useless for users
                log.warning("embedder.name=fake is a hashing test embedder: set embedder.name=sentence_transformers "
                            "(e.g. model=minilm) or pass embedder=...")
            self._embedder = build_embedder(self.config.embedder, self.config.fidelity)
        return self._embedder

    @property
    def llm(self) -> Any:
        """The LLM backend (yours, or the config's, built on first use)."""
        if self._llm is None:
            from atomicrag.engine.api import build_llm

            self._llm = build_llm(self.config.llm, library_paths(self.config.paths), self.accountant)
            self._llm_owned = True
        return self._llm

    # ------------------------------------------------------------------ corpus
    @property
    def documents(self) -> list[Document]:
        return list(self._docs.values())

    @property
    def graph(self) -> Any:
        """The current ``AtomEntityGraph`` (None while the index is empty)."""
        return self._indexed.graph if self._indexed is not None else None

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def get_document(self, doc_id: str) -> Document:
        """The document with id ``doc_id`` (``KeyError`` naming it when there is none)."""
        try:
            return self._docs[doc_id]
        except KeyError:
            raise KeyError(f"unknown document id {doc_id!r}") from None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """All or nothing: an update that fails (atomizer, embedder, LLM error) leaves the index as it was."""
        saved = (dict(self._docs), dict(self._states), self._indexed)
        try:
            with reporting(self._progress):  # embedding and LLM bars follow this object's progress setting
                yield
        except BaseException:
            self._docs, self._states, self._indexed = saved
            raise

    @serialised
    def index(self, documents: Any) -> AtomicRAG:
        """Replace the whole index with ``documents`` (strings, dicts with ``text``, Documents, file or
        folder paths, or a list of these). No documents, a lone word that is no file or folder, or
        another type is an error naming the argument (``normalize_documents``)."""
        docs = normalize_documents(documents, text_titles=self.config.dataset.text_titles, call="index(documents)")
        problems = self._check_answering(warn=False)
        if problems:  # before minutes of indexing, not at the first query after it
            from atomicrag.library.readiness import AnsweringUnavailable, describe

            raise AnsweringUnavailable(describe(problems))
        with self._transaction():
            self._docs, self._states, self._indexed = {}, {}, None
            self._add(docs)
        return self

    @serialised
    def insert(self, documents: Any, *, replace: bool = False) -> list[str]:
        """Add documents after the existing ones; returns their ids, in order. An id already present
        is an error, unless ``replace=True``: then the old version is deleted and the new one appended."""
        docs = normalize_documents(documents, taken=() if replace else self._docs,
                                   text_titles=self.config.dataset.text_titles, call="insert(documents)")
        with self._transaction():
            for d in docs:
                if d.id in self._docs:
                    del self._docs[d.id], self._states[d.id]
            self._add(docs)
        return [d.id for d in docs]

    @serialised
    def delete(self, doc_ids: str | Iterable[str], *, missing_ok: bool = False) -> int:
        """Remove documents by id (with their atoms, orphaned entities and edges); returns how many."""
        ids = [doc_ids] if isinstance(doc_ids, str) else [str(i) for i in doc_ids]
        missing = [i for i in ids if i not in self._docs]
        if missing and not missing_ok:
            raise KeyError(f"unknown document id(s): {', '.join(map(repr, missing[:10]))}")
        gone = [i for i in dict.fromkeys(ids) if i in self._docs]
        if gone:
            with self._transaction():
                for i in gone:
                    del self._docs[i], self._states[i]
                self._reatomize([])  # corpus-level atomizers: the remaining corpus changed
                self._rebuild()
        return len(gone)

    @serialised
    def retry_failed(self) -> int:
        """Atomize again the documents with failed chunks (LLM errors, replies that stayed malformed
        after repair) and update the index in place; documents keep their place. Returns how many
        chunks still fail (0: the index is complete). Failures survive ``save``/``load``. When more
        than ``atomizer.max_chunk_failures_frac`` of the retried chunks fail again it raises, as
        ``index`` does, and the index is left as it was."""
        ids = [r.doc_id for r in self.failures]
        if ids:
            with self._transaction():
                self._reatomize([self._docs[i] for i in ids])
                self._rebuild()
        return sum(len(s.failures) for s in self._states.values())

    def _add(self, docs: list[Document]) -> None:
        if not docs:
            return
        self._docs.update({d.id: d for d in docs})
        self._reatomize(docs)
        self._rebuild()

    def _reatomize(self, docs: list[Document]) -> None:
        """New states for ``docs`` (already in ``_docs``); a corpus-level atomizer (its output
        depends on the whole corpus) redoes every document instead."""
        if self.config.atomizer.name in CORPUS_LEVEL_ATOMIZERS:
            self._states = self._atomize(list(self._docs.values())) if self._docs else {}
        elif docs:
            self._states.update(self._atomize(docs))

    def _atomize(self, docs: list[Document]) -> dict[str, DocState]:
        return atomize_documents(self._engine, self.config, docs, bars=self._progress.bars)

    def _rebuild(self) -> None:
        self._filtered.clear()  # filtered views of the previous graph
        atoms = [a for i in self._docs for a in self._states[i].atoms]
        if not atoms:
            if self._docs:
                log.warning("the %d documents produced no atoms; the index is empty", len(self._docs))
            self._indexed = None
            return
        triples = [t for i in self._docs for t in self._states[i].triples]
        titles = {d.id: d.title for d in self._docs.values() if d.title}
        self._indexed = self._engine.update(self._indexed, atoms, triples, meta={"passage_titles": titles})

    # ------------------------------------------------------------------ query
    def _index(self, where: Any = None) -> Any:
        """The engine's view of this index: one corpus; with ``where``, only the documents it keeps
        (``library.filters``): their graph, as an index of those documents alone would have it,
        derived from this one the way ``delete`` derives it (no re-atomizing, no re-embedding)."""
        from atomicrag.engine import CorpusIndex

        if self._indexed is None:
            raise RuntimeError("the index is empty: call index(documents) or insert(documents) first")
        if where is None:
            return CorpusIndex.single(self._indexed)
        from atomicrag.library.filters import matching_ids

        ids = tuple(matching_ids(self._docs, where))
        if len(ids) == len(self._docs):
            return CorpusIndex.single(self._indexed)
        held = self._filtered.get(ids)
        if held is None or held[0] is not self._indexed:
            atoms = [a for i in ids for a in self._states[i].atoms]
            if not atoms:
                raise ValueError(f"where: the {len(ids)} matching document(s) produced no atoms")
            triples = [t for i in ids for t in self._states[i].triples]
            titles = {i: self._docs[i].title for i in ids if self._docs[i].title}
            sub = self._engine.update(self._indexed, atoms, triples, meta={"passage_titles": titles})
            if len(self._filtered) >= 8:  # a few recent filters; an update of the index drops them all
                self._filtered.pop(next(iter(self._filtered)))
            self._filtered[ids] = held = (self._indexed, sub)
        return CorpusIndex.single(held[1])

    @serialised
    def query(self, question: str | Iterable[str], *, answer: bool | None = None, stream: bool = False,
              where: Any = None) -> QueryResult | list[QueryResult] | AnswerStream:
        """Retrieve (and, when a reader is configured or ``answer=True``, answer) one question or a list.

        All questions of a list are propagated together in one batch. ``stream=True``: one
        question, answered as a stream (``query_stream``). ``where``: only documents whose metadata
        match (``{"source": "wikipedia"}``, ``{"lang": ["en", "de"]}``, or a function of a
        ``Document``; see ``library.filters``). An empty list of questions warns and returns [].
        """
        if stream:
            if not isinstance(question, str):
                raise TypeError(f"query(question, stream=True) answers one question: expected a str; got "
                                f"{type(question).__name__}")
            if answer is False:
                raise ValueError("stream=True streams an answer; answer=False asks for none (use search())")
            return self.query_stream(question, where=where)
        with reporting(self._progress):
            return self._query(question, answer=answer, where=where)

    def query_stream(self, question: str, *, where: Any = None) -> AnswerStream:
        """Retrieve, then answer ``question`` as a stream: iterate for the reply's text as it is
        written (an OpenAI-compatible server streams it; other backends give it whole); the
        ``QueryResult`` is the stream's ``result`` at the end (``get_result()``). The index is held
        for this object's other calls until the stream ends or is closed."""
        if not isinstance(question, str):
            raise TypeError(f"query_stream(question) answers one question: expected a str; got "
                            f"{type(question).__name__}")
        check_questions([question])  # now, not at the first chunk
        return AnswerStream(self._stream(question, where))

    def _stream(self, question: str, where: Any = None) -> Generator[str, None, QueryResult]:
        from atomicrag.core.schemas import Question
        from atomicrag.engine.api import resolve_reader_name

        with self._lock, reporting(self._progress):
            batch = self._engine.retrieve(self._index(where), [Question(id="q0", question=question)])
            kind = resolve_reader_name(self.config.reader.name, self.config.dataset.reader)
            self._warn_fake_llm()
            yield from self._engine.answer_stream(batch, "precise" if kind == "none" else kind)
            self._progress("query", 1, 1)
            return self._result(batch.traces[0], batch.contexts[0], batch.outputs[0])

    def _warn_fake_llm(self) -> None:
        if self.config.llm.name == "fake" and not self._warned_fake and self._llm is None:
            log.warning("answers come from the fake test LLM (llm.name=fake): pass llm=... or set llm.*")
            self._warned_fake = True

    def _query(self, question: str | Iterable[str], *, answer: bool | None = None, where: Any = None
               ) -> QueryResult | list[QueryResult]:
        from atomicrag.core.schemas import Question
        from atomicrag.engine.api import resolve_reader_name

        texts, single = question_list(question)
        check_questions(texts)  # before any model loads or the graph is touched
        if not texts:
            log.warning("query() got an empty list of questions: nothing to answer")
            return []
        batch = self._engine.retrieve(self._index(where), [Question(id=f"q{i}", question=q) for i, q in enumerate(texts)])
        kind = resolve_reader_name(self.config.reader.name, self.config.dataset.reader)
        outputs: list[Any] = [None] * len(texts)
        if answer or (answer is None and kind != "none"):
            kind = "precise" if kind == "none" else kind
            self._warn_fake_llm()
            outputs = self._engine.answer(batch, kind)
        self._progress("query", len(texts), len(texts))
        results = [self._result(t, c, o) for t, c, o in zip(batch.traces, batch.contexts, outputs)]
        return results[0] if single else results

    def search(self, question: str | Iterable[str], *, where: Any = None) -> QueryResult | list[QueryResult]:
        """Retrieval only (the other library's ``RetrievePipeline.search``): no answer is generated."""
        return self.query(question, answer=False, where=where)

    def _result(self, trace: Any, context: list[Any], output: Any) -> QueryResult:
        return query_result(trace, context, output, self._indexed.graph, self.config.sieve.max_context)

    # ------------------------------------------------------------------ persistence
    def _snapshot(self) -> Snapshot:
        emb = self.embedder
        return Snapshot(self.config, self._docs, self._states, self._indexed, {"name": emb.name, "dim": emb.dim})

    @serialised
    def save(self, path: str | Path | None = None, *, store: str = "dir", uri: str | None = None,
             schema: str = "atomicrag") -> None:
        """Save to a versioned directory (``store="dir"``) or PostgreSQL + pgvector (``store="pg"``, ``uri``);
        ``store`` names a ``registry.STORES`` entry."""
        target = STORES.build(store, path=path, uri=uri, schema=schema)
        key = str(Path(path).resolve()) if store == "dir" and path is not None else \
            f"pg:{uri}#{schema}" if store == "pg" and uri else None
        # the version this object loaded from (or last saved to) that folder or schema: a newer one
        # there is another writer's, and save refuses to overwrite it (library.io.IndexChangedError)
        if key:
            self._versions[key] = target.save(self._snapshot(), expect=self._versions.get(key))
        else:  # a store registered by the user: its own save(snapshot)
            target.save(self._snapshot())

    @classmethod
    def load(cls, path: str | Path | None = None, *, uri: str | None = None, schema: str = "atomicrag",
             llm: Any = None, embedder: Any = None, config: Config | dict | None = None,
             progress: bool | ProgressFn | None = None, overrides: Sequence[str] = ()) -> AtomicRAG:
        """Open a saved index. ``config``: a dict of overrides on the saved config (or a full
        ``Config``) for query-time settings; ``overrides``: the same as Hydra override strings
        (``retriever.top_k=10``, the CLI's ``--set``), applied after ``config``. Settings that decide
        how the index was built cannot change."""
        if (path is None) == (uri is None):
            raise ValueError("load() needs exactly one of path=... or uri=...")
        info, snap = STORES.build("pg" if uri is not None else "dir", path=path, uri=uri, schema=schema).load()
        cfg = reopen_config(info["config"], config, overrides, byo_embedder=embedder is not None)
        if embedder is None:  # no model load until texts must be embedded (docs, stats, delete need none)
            from atomicrag.engine.api import lazy_saved_embedder

            embedder = lazy_saved_embedder(cfg, snap.embedder)
        with no_answering_warning():
            rag = cls(cfg, llm=llm, embedder=embedder, progress=progress)
        rag._versions[str(Path(path).resolve()) if path is not None else f"pg:{uri}#{schema}"] = info.get("version")
        check_reopen_embedder(rag.embedder, snap.embedder)
        rag._docs, rag._states, rag._indexed = snap.documents, snap.states, snap.indexed
        return rag

    @serialised
    def close(self) -> None:
        """Close the LLM backend this object built (stops a server it launched)."""
        self._progress.close()
        if self._llm is not None and self._llm_owned:
            self._llm.close()
            self._llm, self._llm_owned = None, False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        g = self.graph
        size = f"{g.num_atoms} atoms, {g.num_entities} entities" if g is not None else "empty"
        return f"AtomicRAG({len(self._docs)} documents, {size})"
