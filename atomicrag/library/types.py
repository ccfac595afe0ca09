"""Plain records of the library face: documents in, query results out, progress reporting.

Kept apart from ``api.py`` so that the result types can be imported (and type-checked against)
without pulling in torch or the retrieval stack.
"""
from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from atomicrag.core.artifacts import content_hash
from atomicrag.core.progress import Progress, ProgressFn  # noqa: F401  (the library's progress= types)
from atomicrag.core.schemas import Atom, ChunkFailure, Triple
from atomicrag.engine.api import (
    Source,  # noqa: F401  (QueryResult.sources' type)
    clean_text,
)

_ID_KEYS = ("doc_id", "id")
_RESERVED = ("text", "title", *_ID_KEYS)


@dataclass
class Document:
    """One document of the library's corpus; ``meta`` holds every extra key the user gave."""

    id: str
    text: str
    title: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Document:
        return cls(id=str(d["id"]), text=d["text"], title=d.get("title") or "", meta=dict(d.get("meta") or {}))


@dataclass
class DocState:
    """A document's atomization, kept so an update never re-atomizes untouched documents."""

    atoms: list[Atom] = field(default_factory=list)
    triples: list[Triple] = field(default_factory=list)
    failures: list[ChunkFailure] = field(default_factory=list)
    chunks: int = 0

    def to_record(self, doc_id: str) -> dict[str, Any]:
        """JSON record without the atoms (the graph's atom table already holds them)."""
        return {"id": doc_id, "chunks": self.chunks,
                "triples": [t.to_dict() for t in self.triples], "failures": [f.to_dict() for f in self.failures]}

    @classmethod
    def from_record(cls, rec: dict[str, Any], atoms: list[Atom]) -> DocState:
        return cls(atoms=atoms, triples=[Triple(**t) for t in rec.get("triples", [])],
                   failures=[ChunkFailure(**f) for f in rec.get("failures", [])],
                   chunks=int(rec.get("chunks", 0)))


@dataclass(frozen=True)
class DocumentReport:
    """How one document's chunks fared in atomization: the public face of its ``DocState``."""

    doc_id: str
    chunks: int
    failures: tuple[ChunkFailure, ...] = ()  # chunk id, stage and reason of each failed chunk

    @property
    def failed_chunks(self) -> int:
        return len(self.failures)

    @property
    def reasons(self) -> list[str]:
        return [f.reason for f in self.failures]


_DOCUMENTS_EXPECTED = ("a str (a document's text, or a file or folder path), a dict with 'text', a Document, "
                       "a pathlib.Path, or a list of these")


def _shown(value: Any) -> str:
    """``int (42)``: a value's type and a short repr, for errors that name what was given."""
    text = repr(value)
    return f"{type(value).__name__} ({text[:60] + '...' if len(text) > 60 else text})"


def _check_bare_word(text: str, call: str) -> None:
    """A whole argument that is one word of file-name characters (``index("docs")``) is a path that
    does not exist far more often than a one-word document: an error that says how to index the
    word. A word ending like a sentence ("Warsaw.") is a document."""
    from atomicrag.engine.api import SUFFIXES

    word = text.strip()
    if "/" in word or "\\" in word or Path(word).suffix.lower() in SUFFIXES:
        return  # a path by its look: data.ingest says it does not exist
    # a file or folder name's characters, not ending like a sentence ("Warsaw." stays a document)
    if len(word) <= 255 and re.fullmatch(r"[\w~.-]+", word) and not word.endswith((".", "!", "?")):
        try:
            exists = Path(word).expanduser().exists()
        except OSError:
            return
        if not exists:
            raise FileNotFoundError(f"{call}: {text!r} is not a file or folder (looked in {Path.cwd()}); "
                                    f"to index the word itself pass {{'text': {text!r}}}")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_surrogates(call: str, n: int, doc_id: Any, meta: dict[str, Any], **fields: str) -> None:
    """A lone surrogate is no Unicode text (it cannot be encoded, and spaCy fails on it far from
    here): an error naming the document, the field and where, before any model runs."""
    for name, value in fields.items():
        bad = _SURROGATE.search(value)
        if bad:
            which = f"document #{n}" + (f" ({doc_id!r})" if doc_id is not None else "")
            if meta.get("path"):
                which += f", file {meta['path']}"
            raise ValueError(f"{call}: {which}: its {name} holds a lone surrogate U+{ord(bad.group()):04X} at "
                             f"character {bad.start()}, which is not Unicode text (a JSON '\\ud800' escape, or "
                             "bytes decoded with errors='surrogateescape'); replace it, e.g. "
                             "text.encode('utf-8', 'replace').decode('utf-8')")


def normalize_documents(documents: Any, taken: Iterable[str] = (), *, text_titles: bool = True,
                        call: str = "documents") -> list[Document]:
    """Strings, dicts (``text`` + optional ``doc_id``/``id``, ``title``, any metadata),
    ``Passage``-like objects, files or folders -> ``Document``s with unique ids.

    A document without an id gets ``doc-<hash of its text>`` (plus ``-2``, ``-3``... when the
    same text occurs again), so re-indexing the same corpus gives the same ids. Files and
    folders are read by ``data.ingest`` (see ``expand_paths``; ``text_titles``: a ``.md``/``.txt``
    file's title line is its title). Empty text is an error, and so is an empty list, an argument
    of another type (``call`` names the argument in the message: ``index(documents)``) and a lone
    word that is no file or folder (a mistyped path, not a document).
    """
    from atomicrag.engine.api import expand_paths

    if isinstance(documents, str):
        _check_bare_word(documents, call)
    if isinstance(documents, (str, dict, PathLike)) or hasattr(documents, "text"):
        documents = [documents]  # a single document, not an iterable of characters/keys
    elif documents is None or isinstance(documents, (bytes, bytearray)) or not isinstance(documents, Iterable):
        raise TypeError(f"{call}: expected {_DOCUMENTS_EXPECTED}; got {_shown(documents)}")
    documents = list(documents)
    if not documents:
        raise ValueError(f"{call}: no documents (an empty {type(documents).__name__}); pass at least one")
    documents = expand_paths(documents, text_titles=text_titles)
    used = set(taken)
    out: list[Document] = []
    for n, doc in enumerate(documents):
        if isinstance(doc, str):
            text, title, doc_id, meta = doc, "", None, {}
        elif isinstance(doc, dict):
            if "text" not in doc:
                raise ValueError(f"document #{n} has no 'text' key (keys: {sorted(doc)})")
            text, title = doc["text"], doc.get("title") or ""
            ids = [doc[k] for k in _ID_KEYS if doc.get(k) is not None]
            if len(ids) == 2 and str(ids[0]) != str(ids[1]):
                raise ValueError(f"document #{n} has both doc_id={ids[0]!r} and id={ids[1]!r}")
            doc_id = ids[0] if ids else None
            meta = {k: v for k, v in doc.items() if k not in _RESERVED}
        elif hasattr(doc, "text") and hasattr(doc, "id"):
            text, title, doc_id = doc.text, getattr(doc, "title", "") or "", doc.id
            meta = dict(getattr(doc, "meta", None) or {})
        else:
            raise TypeError(f"{call}: document #{n} is {_shown(doc)}; expected a str, a dict with 'text', "
                            "a Document or a path")
        if not isinstance(text, str):
            raise TypeError(f"{call}: document #{n}: 'text' must be a str, not {_shown(text)}")
        text, title = clean_text(text), clean_text(str(title))  # NUL and other control characters
        _check_surrogates(call, n, doc_id, meta, text=text, title=title)
        if not text.strip():  # the harness rejects empty passages too (data.validate.nonempty_str)
            raise ValueError(f"document #{n}{f' ({doc_id!r})' if doc_id is not None else ''} has empty text")
        if doc_id is None:
            base = "doc-" + content_hash(text, length=12)
            doc_id, k = base, 1
            while doc_id in used:
                k += 1
                doc_id = f"{base}-{k}"
        doc_id = str(doc_id)
        if not doc_id:
            raise ValueError(f"document #{n} has an empty id")
        if doc_id in used:
            raise ValueError(f"duplicate document id {doc_id!r} (delete it first, or insert(..., replace=True))")
        used.add(doc_id)
        out.append(Document(doc_id, text, str(title), meta))
    return out


def relative_relevance(score: float, best: float) -> float:
    """``score / best`` in [0, 1], rounded (0 when nothing scored)."""
    return round(max(0.0, score) / best, 4) if best > 0 else 0.0


@dataclass
class ResultItem:
    """One retrieved atom: its text, retrieval score and provenance."""

    text: str
    score: float
    atom_id: str
    source_doc_ids: list[str] = field(default_factory=list)
    entity_names: list[str] = field(default_factory=list)
    title: str = ""
    # score / the best item's score in this result: 1.0 for the top item, 0.5 for half its evidence.
    # Raw PPR masses (``score``) shrink with graph size and are not comparable across queries.
    relevance: float = 0.0

    @property
    def content(self) -> str:  # the other library's name for the text
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class QueryResult:
    """The answer to one question: retrieved atoms best first, plus everything around them."""

    query: str
    items: list[ResultItem] = field(default_factory=list)
    entities_extracted: list[str] = field(default_factory=list)
    answer: str | None = None  # None when no reader ran (reader.name=none)
    graph_stats: dict[str, Any] = field(default_factory=dict)
    sub_questions: list[str] = field(default_factory=list)
    context: list[dict[str, Any]] = field(default_factory=list)  # what the reader saw (citation units)
    errors: list[str] = field(default_factory=list)
    # document ids best first, by the retriever's passage ranking (retriever.passage_ranking: with
    # the default ``bridge`` this includes documents about an entity a top atom names, which the
    # atom list may not reach; Recall@k in the harness is computed on this list)
    documents: list[str] = field(default_factory=list)
    # the documents the answer used, [n] in ``cited_answer`` (answer.citations: the reader's
    # citation marks mapped to documents; empty when no reader ran or nothing is cited)
    sources: list[Source] = field(default_factory=list)
    cited_answer: str | None = None  # the answer followed by its sources' marks: "Bern [1][2]"
    # the reader's reply reached reader.max_tokens: the answer is what was written before the cut,
    # "" when the cut came before it (never an answer, always reported: the CLI exits non-zero)
    answer_cut: bool = False
    # the cut reply was a loop (a line repeated until the budget): a larger reader.max_tokens would
    # only loop longer, so it is not advised (answer.loops)
    answer_looped: bool = False
    # the reader gave no answer, so ``answer`` is the retrieved sentence that best supports one,
    # its document the one source (how="extractive"): a quote, never the model's words
    extractive: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        """The result as JSON; also written to ``path`` when one is given."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text


class AnswerStream:
    """A streamed answer (``AtomicRAG.query_stream``): iterating yields the reader's reply as the
    model writes it (its reasoning after "Thought:", then "Answer:" and the answer); once the
    iteration ends, ``result`` is the ``QueryResult`` (the parsed answer, its sources, whether it
    was cut). ``get_result()`` reads whatever is left and returns it."""

    def __init__(self, chunks: Generator[str, None, QueryResult]) -> None:
        self._chunks = chunks
        self.result: QueryResult | None = None

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        try:
            return next(self._chunks)
        except StopIteration as stop:
            if stop.value is not None:  # an exhausted generator stops again with None: keep the result
                self.result = stop.value
            raise

    def get_result(self) -> QueryResult:
        for _ in self:
            pass
        if self.result is None:  # the generator was closed before its end
            raise RuntimeError("the stream was closed before its answer was complete")
        return self.result

    def close(self) -> None:
        """Stop early (releases the index for other calls)."""
        self._chunks.close()


def question_list(question: Any, call: str = "query(question)") -> tuple[list[str], bool]:
    """``(questions, single)`` of a query's argument: one str, or an iterable of str. Anything else
    is a ``TypeError`` naming the argument, what it expected and what it got."""
    if isinstance(question, str):
        return [question], True
    if question is None or isinstance(question, (bytes, bytearray, dict)) or not isinstance(question, Iterable):
        raise TypeError(f"{call}: expected a str or a list of str; got {_shown(question)}")
    texts = list(question)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{call}: question {i + 1} of {len(texts)} is {_shown(text)}; expected a str")
    return texts, False


def check_questions(texts: list[str]) -> None:
    """An empty or whitespace-only question is an error, not a query that returns arbitrary atoms."""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"a question must be a str, not {_shown(text)}")
        if not text.strip():
            which = "the question" if len(texts) == 1 else f"question {i + 1} of {len(texts)}"
            raise ValueError(f"{which} is empty{' (only whitespace)' if text else ''}: ask something")
