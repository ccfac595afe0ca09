"""Loaders for public third-party layouts: GraphRAG-Bench and HippoRAG (Hugging Face: ``hf.py``).

They are more lenient than the normalized loader about *representation* (integer ids become
strings, a single answer string becomes a list) because the public files are like that, but
never about *content*: empty text, missing fields and duplicate ids are ``DataError``s.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from atomicrag.core.config import DatasetConfig
from atomicrag.core.schemas import Passage, Question
from atomicrag.data.validate import (
    DataError,
    IdRegistry,
    Where,
    check_type,
    coerce_answers,
    coerce_id,
    nonempty_str,
    optional,
    read_json,
)

log = logging.getLogger(__name__)

Loaded = tuple[list[Passage], list[Question], list[Path]]

# HippoRAG corpora are lists; passage ids are "<prefix>-<index:05d>". The 2Wiki prefix matches
# the normalized copy (``atomicrag data get 2wikimultihopqa``), so gold ids agree between the two.
ID_PREFIX = {"2wikimultihopqa": "2wiki"}


def _root(cfg: DatasetConfig, data_dir: Path) -> Path:
    return Path(cfg.path).expanduser() if cfg.path else data_dir / cfg.name


def _records(path: Path) -> list[tuple[Where, dict[str, Any]]]:
    """Records of a JSON file (an object or a list of objects) or a parquet table."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows: Any = pq.read_table(path).to_pylist()
    else:
        rows = read_json(path)
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list):
        raise DataError(path, None, None, f"expected a JSON list of objects, got {type(rows).__name__}")
    out = []
    for i, row in enumerate(rows, 1):
        w = Where(path, i, unit="record")
        if not isinstance(row, dict):
            raise w.error(None, f"expected an object, got {type(row).__name__}")
        out.append((w, row))
    return out


def _first_existing(*paths: Path) -> Path | None:
    return next((p for p in paths if p.is_file()), None)


# ----------------------------------------------------------------------------- GraphRAG-Bench
def load_graphrag_bench(cfg: DatasetConfig, data_dir: Path, require_corpus: bool) -> Loaded:
    """``<root>/[Datas/]Corpus/<subset>.json`` + ``Questions/<subset>_questions.json``.

    The subset (``medical`` / ``novel``) is the corpus file whose stem occurs in ``cfg.name``,
    or the only one there. Parquet copies (AtomicRAG's ``abstract_qa`` folder) work too.
    """
    root = _root(cfg, data_dir)
    base = root / "Datas" if (root / "Datas").is_dir() else root
    corpus_dir, q_dir = base / "Corpus", base / "Questions"
    if not q_dir.is_dir():
        raise FileNotFoundError(f"GraphRAG-Bench layout: {q_dir} not found (expected Corpus/ and Questions/)")
    stems = sorted({p.stem.removesuffix("_questions") for p in q_dir.iterdir() if p.suffix in (".json", ".parquet")})
    matching = [s for s in stems if s.lower() in cfg.name.lower()]
    if len(matching) == 1 or len(stems) == 1:
        subset = (matching or stems)[0]
    else:
        raise ValueError(f"GraphRAG-Bench: cannot tell which subset of {stems} dataset {cfg.name!r} means; "
                         "put the subset name (e.g. 'medical') into dataset.name")
    qfile = _first_existing(q_dir / f"{subset}_questions.json", q_dir / f"{subset}_questions.parquet")
    cfile = _first_existing(corpus_dir / f"{subset}.json", corpus_dir / f"{subset}.parquet")
    if qfile is None:
        raise FileNotFoundError(f"GraphRAG-Bench: no {subset}_questions.json/.parquet in {q_dir}")
    passages: list[Passage] = []
    files = [qfile]
    if cfile is not None:
        passages = _graphrag_bench_corpus(cfile)
        files.insert(0, cfile)
    elif require_corpus:
        raise FileNotFoundError(f"GraphRAG-Bench: no {subset}.json/.parquet in {corpus_dir}")
    questions = _graphrag_bench_questions(qfile, [p.id for p in passages])
    return passages, questions, files


def _graphrag_bench_corpus(path: Path) -> list[Passage]:
    ids = IdRegistry("corpus")
    out = []
    for w, row in _records(path):
        name = nonempty_str(row, "corpus_name", w)
        ids.add(name, "corpus_name", w)
        # one document per corpus (a whole novel / the medical guideline); the chunker cuts it
        out.append(Passage(id=name, title=name, text=nonempty_str(row, "context", w), corpus=name))
    if not out:
        raise DataError(path, None, None, "no documents in file")
    return out


def _graphrag_bench_questions(path: Path, corpus_names: list[str]) -> list[Question]:
    rows = _records(path)
    parsed = []
    for w, row in rows:
        qid = coerce_id(row.get("id"), "id", w) if "id" in row else None
        if qid is None:
            raise w.error("id", "missing required field")
        source = optional(row, "source", (str,), w, None)
        if "answer" not in row and "answers" not in row:
            raise w.error("answer", "missing required field")
        answers = coerce_answers(row.get("answer", row.get("answers")), "answer", w)
        parsed.append((w, row, qid, source, answers))
    # The public Novel file reuses a few ids across novels; they are distinct questions, so they
    # become "<id>@<source>" exactly as in the normalized copy. The same id twice in the same
    # source is a real duplicate.
    counts = Counter(qid for _, _, qid, _, _ in parsed)
    seen = IdRegistry("question")
    single = corpus_names[0] if len(corpus_names) == 1 else None
    known = set(corpus_names)
    out = []
    for w, row, qid, source, answers in parsed:
        new_id = qid if counts[qid] == 1 else f"{qid}@{source}"
        seen.add(new_id, "id", w)
        meta = {k: v for k, v in row.items()
                if k not in ("id", "question", "answer", "answers", "question_type", "evidence")}
        if new_id != qid:
            meta["original_id"] = qid
        corpus = source or single
        if known and corpus not in known:
            log.warning("%s: question %s names source %r, which is not a corpus document", path, qid, corpus)
        out.append(Question(
            id=new_id,
            question=nonempty_str(row, "question", w),
            answers=answers,
            question_type=optional(row, "question_type", (str,), w, ""),
            evidence=row.get("evidence"),
            corpus=corpus,
            meta=meta,
        ))
    if not out:
        raise DataError(path, None, None, "no questions in file")
    return out


# ----------------------------------------------------------------------------- HippoRAG
def load_hipporag(cfg: DatasetConfig, data_dir: Path, require_corpus: bool) -> Loaded:
    """``<name>.json`` (questions) + ``<name>_corpus.json`` (list of ``{title, text}``).

    ``cfg.path`` may be the folder holding them or the questions file itself. Passage ids are
    ``f"{prefix}-{i:05d}"`` (position in the corpus list), gold ids come from ``paragraphs``
    with ``is_supporting`` (MuSiQue, HippoRAG's own format) or ``supporting_facts`` titles (2Wiki,
    HotpotQA).
    """
    root = _root(cfg, data_dir)
    if root.is_file():
        qfile, stem = root, root.stem
        cfile = root.parent / f"{stem}_corpus.json"
    else:
        stem = cfg.name
        qfile, cfile = root / f"{stem}.json", root / f"{stem}_corpus.json"
    if not qfile.is_file():
        raise FileNotFoundError(f"HippoRAG layout: questions file {qfile} not found")
    passages: list[Passage] = []
    files = [qfile]
    if cfile.is_file():
        passages = _hipporag_corpus(cfile, ID_PREFIX.get(stem, stem))
        files.insert(0, cfile)
    elif require_corpus:
        raise FileNotFoundError(f"HippoRAG layout: corpus file {cfile} not found")
    return passages, _hipporag_questions(qfile, passages), files


def _hipporag_corpus(path: Path, prefix: str) -> list[Passage]:
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(path, None, None, f"expected a JSON list of {{title, text}} objects, got {type(data).__name__}")
    out = []
    for i, row in enumerate(data):
        w = Where(path, i + 1, unit="record")
        if not isinstance(row, dict):
            raise w.error(None, f"expected an object, got {type(row).__name__}")
        meta = {"idx": row["idx"]} if "idx" in row else {}
        out.append(Passage(id=f"{prefix}-{i:05d}", title=optional(row, "title", (str,), w, ""),
                           text=nonempty_str(row, "text", w), meta=meta))
    return out


class _SupportResolver:
    """Map a gold paragraph (title, maybe text) to a corpus passage id."""

    def __init__(self, passages: list[Passage]) -> None:
        self.by_title: dict[str, list[Passage]] = {}
        for p in passages:
            self.by_title.setdefault(p.title, []).append(p)

    def resolve(self, title: str, texts: Iterable[str] = ()) -> str | None:
        cands = self.by_title.get(title, [])
        if len(cands) > 1:  # MuSiQue repeats titles: the text decides
            wanted = {t.strip() for t in texts if t}
            for p in cands:
                if p.text.strip() in wanted:
                    return p.id
        return cands[0].id if cands else None


def _hipporag_questions(path: Path, passages: list[Passage]) -> list[Question]:
    resolver = _SupportResolver(passages)
    ids = IdRegistry("question")
    unresolved_total = 0
    out = []
    for w, row in _records(path):
        key = "_id" if "_id" in row else "id"
        if key not in row:
            raise w.error("id", "missing required field (id or _id)")
        qid = coerce_id(row[key], key, w)
        ids.add(qid, key, w)
        answers: list[str] = []
        for akey in ("answers", "answer", "answer_aliases", "possible_answers"):
            for a in coerce_answers(row.get(akey), akey, w):
                if a not in answers:
                    answers.append(a)
        if not any(k in row for k in ("answers", "answer", "possible_answers")):
            raise w.error("answer", "missing required field (answer or answers)")
        support, unresolved = _hipporag_support(row, w, resolver)
        unresolved_total += len(unresolved)
        meta: dict[str, Any] = {"source_id": row[key]}
        for k in ("type", "level", "answerable"):
            if k in row:
                meta[k] = row[k]
        if unresolved:
            meta["unresolved_support"] = unresolved
        evidence = next((row[k] for k in ("evidences", "question_decomposition", "supporting_facts")
                         if k in row), None)
        qtype = row.get("type") if isinstance(row.get("type"), str) else ""
        out.append(Question(id=qid, question=nonempty_str(row, "question", w), answers=answers,
                            question_type=qtype, supporting_ids=support, evidence=evidence, meta=meta))
    if unresolved_total and passages:
        log.warning("%s: %d gold paragraphs match no corpus passage (kept in meta.unresolved_support)",
                    path, unresolved_total)
    return out


def _hipporag_support(row: dict[str, Any], w: Where, resolver: _SupportResolver) -> tuple[list[str], list[str]]:
    """Gold passage ids of one HippoRAG question, and the titles that matched nothing."""
    golds: list[tuple[str, list[str]]] = []  # (title, candidate texts)
    if "paragraphs" in row:
        paras = check_type(row["paragraphs"], "paragraphs", (list,), w)
        for i, para in enumerate(paras):
            if not isinstance(para, dict):
                raise w.error(f"paragraphs[{i}]", f"expected an object, got {type(para).__name__}")
            if para.get("is_supporting"):
                text = para.get("text") or para.get("paragraph_text") or ""
                golds.append((str(para.get("title", "")), [text]))
    elif "supporting_facts" in row:
        facts = check_type(row["supporting_facts"], "supporting_facts", (list,), w)
        context = {c[0]: c[1] for c in row.get("context") or [] if isinstance(c, list) and len(c) == 2}
        seen_titles: list[str] = []
        for i, fact in enumerate(facts):
            if not isinstance(fact, list) or not fact or not isinstance(fact[0], str):
                raise w.error(f"supporting_facts[{i}]", "expected [title, sentence_index]")
            if fact[0] not in seen_titles:
                seen_titles.append(fact[0])
        for title in seen_titles:
            sents = [s for s in context.get(title, []) if isinstance(s, str)]
            golds.append((title, ["".join(sents), " ".join(sents)]))
    support, unresolved = [], []
    for title, texts in golds:
        pid = resolver.resolve(title, texts)
        if pid is None:
            unresolved.append(title)
        elif pid not in support:
            support.append(pid)
    return support, unresolved
