"""Plain data records that flow between pipeline stages.

Every stage takes and returns these dataclasses (or lists of them), so a stage can be
tested, cached and swapped on its own. All of them serialise with ``to_dict``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class Passage:
    """One document of a corpus as it was given to us."""

    id: str
    text: str
    title: str = ""
    corpus: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Chunk:
    """A token window of a passage; the unit an atomizer reads."""

    id: str
    passage_id: str
    text: str
    title: str = ""
    index: int = 0  # position of the chunk inside its passage
    start_char: int = 0  # character span inside the passage text
    end_char: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Question:
    id: str
    question: str
    answers: list[str] = field(default_factory=list)
    question_type: str = ""
    supporting_ids: list[str] = field(default_factory=list)
    evidence: Any = None
    corpus: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Triple:
    subject: str
    predicate: str
    object: str
    chunk_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Atom:
    """A knowledge atom: one self-contained statement with the entities it mentions."""

    id: str
    text: str
    chunk_id: str
    passage_id: str
    entities: list[str] = field(default_factory=list)
    # character span in the chunk of the sentence the atom is (the text may add the chunk's title
    # as a prefix, AtomizerConfig.title_context); None when the LLM rewrote the statement
    span: tuple[int, int] | None = None
    # other places of the same sentence: [chunk_id, start, end] in that chunk (a sentence that
    # overlapping token windows repeat is one atom, atomize/windows.py)
    positions: list[list[Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["span"] = list(self.span) if self.span is not None else None
        if not self.positions:  # existing artifacts and stores keep their exact form
            d.pop("positions")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Atom:
        span = d.get("span")
        return cls(
            id=d["id"],
            text=d["text"],
            chunk_id=d["chunk_id"],
            passage_id=d["passage_id"],
            entities=list(d.get("entities") or []),
            span=tuple(span) if span else None,
            positions=[list(p) for p in d.get("positions") or []],
        )


@dataclass
class ChunkFailure:
    """A chunk an atomizer could not process; always reported, never silently dropped."""

    chunk_id: str
    stage: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AtomizeResult:
    atoms: list[Atom]
    triples: list[Triple] = field(default_factory=list)
    failures: list[ChunkFailure] = field(default_factory=list)
    llm_calls: int = 0
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScoredAtom:
    atom_id: str
    text: str
    score: float
    passage_id: str
    chunk_id: str = ""
    entities: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_TRACE = {"trace": True}


@dataclass
class QueryTrace:
    """Everything that happened for one question: written as one line of predictions.jsonl."""

    question_id: str
    question: str
    sub_questions: list[str] = field(default_factory=list)
    # fields marked _TRACE say what a run did, not what it scored: a published record may drop them
    decomposition: dict[str, Any] = field(default_factory=dict, metadata=_TRACE)
    seeds: list[dict[str, Any]] = field(default_factory=list, metadata=_TRACE)
    candidates: list[list[dict[str, Any]]] = field(default_factory=list, metadata=_TRACE)  # per query: top-k atoms
    sieve: list[dict[str, Any]] = field(default_factory=list, metadata=_TRACE)
    context: list[dict[str, Any]] = field(default_factory=list, metadata=_TRACE)
    answer: str = ""
    raw_answer: str = field(default="", metadata=_TRACE)
    retrieved_passages: list[str] = field(default_factory=list)
    # per module: the new tokens of this question's LLM calls (cache hits count 0)
    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    # per stage: this question's share of the stage's batch wall time (questions run as one batch)
    seconds: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # per module: the completion budget (max_tokens) that cut this question's reply; not an error
    cut: dict[str, int] = field(default_factory=dict)
    # how many ranked documents the reader read at most (0: as many as its token budget held;
    # None: it read atoms), the LLM option's llm.reader_documents unless reader.max_documents is set;
    # a setting of the answer, not a trace: a published record keeps it
    reader_documents: int | None = None

    def add_tokens(self, module: str, prompt: int, completion: int) -> None:
        if not (prompt or completion):
            return
        cell = self.tokens.setdefault(module, {"prompt_tokens": 0, "completion_tokens": 0})
        cell["prompt_tokens"] += int(prompt or 0)
        cell["completion_tokens"] += int(completion or 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# the per-question fields that are traces (see QueryTrace): what scripts/publish_runs.py drops
# from a record too large to commit whole
TRACE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(QueryTrace) if f.metadata.get("trace"))
