"""Dataset loaders: files on disk → ``Dataset`` (passages + questions).

``load_dataset(cfg, data_dir)`` dispatches on ``cfg.format``:

* ``normalized`` — this project's layout (``<data_dir>/<name>/``: the shipped smoke sets, or what ``atomicrag data get`` writes):
  ``corpus.jsonl`` + ``questions.{dev,heldout}.jsonl`` / ``questions.jsonl``, and
  ``smoke/{corpus,questions}.jsonl``. Validated strictly (exact field types).
* ``graphrag_bench`` — the public GraphRAG-Bench release (``Corpus/*.json``, ``Questions/*_questions.json``).
* ``hipporag`` — HippoRAG's ``<name>.json`` + ``<name>_corpus.json``.
* ``hf`` — Hugging Face ``datasets`` (local files, ``save_to_disk`` folders, or hub ids).

The last three live in ``atomicrag.data.formats`` and ``atomicrag.data.hf``. All of them raise ``DataError`` (a
``ValueError``) naming file, line/record and field for malformed input; missing files raise
``FileNotFoundError`` saying what was looked for.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

from atomicrag.core.artifacts import content_hash
from atomicrag.core.config import DatasetConfig, PathsConfig
from atomicrag.core.schemas import Passage, Question
from atomicrag.data.validate import (
    DataError,
    IdRegistry,
    Where,
    iter_jsonl,
    nonempty_str,
    optional,
    str_list,
)

log = logging.getLogger(__name__)

PASSAGE_FIELDS = ("id", "title", "text", "corpus", "meta")
QUESTION_FIELDS = ("id", "question", "answers", "question_type", "supporting_ids", "evidence", "corpus", "meta")

# split -> (sub-folder, questions file) of the normalized layout
SPLIT_FILES: dict[str, tuple[str, str]] = {
    "smoke": ("smoke", "questions.jsonl"),
    "dev": ("", "questions.dev.jsonl"),
    "heldout": ("", "questions.heldout.jsonl"),
    "all": ("", "questions.jsonl"),
}


@dataclass
class Dataset:
    """A loaded benchmark: the corpus to index and the questions to ask of it."""

    name: str
    passages: list[Passage]
    questions: list[Question]
    reader: str = "precise"  # the reader this dataset expects (precise short QA | abstract)
    files: list[str] = field(default_factory=list)  # files read, for manifests and error reports

    def fingerprint(self) -> str:
        """Hash of the corpus content: the cache key of every stage downstream of loading."""
        return content_hash([(p.id, p.title, p.text, p.corpus) for p in self.passages])

    def passage_index(self) -> dict[str, Passage]:
        return {p.id: p for p in self.passages}


def load_dataset(cfg: DatasetConfig, data_dir: str | Path, *, require_corpus: bool = True) -> Dataset:
    """Load ``cfg`` from ``data_dir`` (``PathsConfig.resolved_data_dir()``), or ``cfg.path`` if set.

    ``require_corpus=False`` allows question-only sets (e.g. MuSiQue here, which has no
    corpus offline): ``passages`` is then empty instead of an error.
    """
    from atomicrag.core.registry import DATASETS

    if cfg.format not in DATASETS:
        raise ValueError(f"unknown dataset format {cfg.format!r}; known: {', '.join(DATASETS.names())}")
    loader = DATASETS.get(cfg.format)  # third-party formats import optional dependencies only when used
    passages, questions, files = loader(cfg, Path(data_dir), require_corpus)
    if cfg.index_prefix:  # the released runner indexes f"{idx}:{chunk}" for the idx-th chunk of its file
        passages = [dataclasses.replace(p, text=f"{i}:{p.text}") for i, p in enumerate(passages)]
    if cfg.limit is not None:
        questions = questions[: cfg.limit]
    log.info("dataset %s (%s/%s): %d passages, %d questions", cfg.name, cfg.format, cfg.split,
             len(passages), len(questions))
    return Dataset(cfg.name, passages, questions, reader=cfg.reader, files=[str(f) for f in files])


# ----------------------------------------------------------------------------- normalized
def normalized_files(cfg: DatasetConfig, data_dir: Path) -> tuple[Path, Path]:
    """(questions file, corpus file) of the normalized layout for ``cfg``; they may not exist."""
    root = Path(cfg.path).expanduser() if cfg.path else data_dir / cfg.name
    if root.is_file():  # an explicit questions file: its corpus sits beside it
        qfile, folder, root = root, root.parent, root.parent
    else:
        if cfg.split not in SPLIT_FILES:
            raise ValueError(
                f"dataset {cfg.name!r}: split {cfg.split!r} is not one of {', '.join(SPLIT_FILES)} "
                "for the normalized format"
            )
        sub, qname = SPLIT_FILES[cfg.split]
        folder = root / sub if sub else root
        qfile = folder / qname
    cname = Path(cfg.corpus_file or "corpus.jsonl").expanduser()
    if cname.is_absolute():
        return qfile, cname
    # a corpus override such as corpus_atomicrag_chunks.jsonl may exist only at the top level
    candidates = [folder / cname, root / cname]
    corpus = next((c for c in candidates if c.is_file()), candidates[0])
    return qfile, corpus


def load_normalized(
    cfg: DatasetConfig, data_dir: Path, require_corpus: bool
) -> tuple[list[Passage], list[Question], list[Path]]:
    qfile, cfile = normalized_files(cfg, data_dir)
    if not qfile.is_file():
        raise DatasetMissing(f"dataset {cfg.name!r} split {cfg.split!r}: {qfile} not found"
                             f"{_listing(qfile.parent)}.{get_hint(cfg)}")
    questions = read_questions_jsonl(qfile)
    files = [qfile]
    if cfile.is_file():
        passages = read_passages_jsonl(cfile)
        files.insert(0, cfile)
        if cfg.corpus_file is None:  # overrides (re-chunked corpora) legitimately use other ids
            _warn_unknown_support(questions, passages, cfile)
    elif require_corpus:
        raise FileNotFoundError(
            f"dataset {cfg.name!r}: corpus {cfile} not found{_listing(cfile.parent)}. This dataset may "
            "ship questions only (see its SOURCE.md); set dataset.corpus_file / dataset.path to a "
            "corpus, or load with require_corpus=False for questions only."
        )
    else:
        passages = []
    return passages, questions, files


def read_passages_jsonl(path: str | Path) -> list[Passage]:
    """Read a normalized ``corpus.jsonl`` (``id, title, text[, corpus, meta]``), strictly."""
    path = Path(path)
    ids = IdRegistry("passage")
    out: list[Passage] = []
    for lineno, obj in iter_jsonl(path):
        w = Where(path, lineno)
        pid = nonempty_str(obj, "id", w)
        ids.add(pid, "id", w)
        meta = dict(optional(obj, "meta", (dict,), w, {}))
        meta.update({k: v for k, v in obj.items() if k not in PASSAGE_FIELDS})  # keep unknown columns
        out.append(Passage(
            id=pid,
            text=nonempty_str(obj, "text", w),
            title=optional(obj, "title", (str,), w, ""),
            corpus=optional(obj, "corpus", (str,), w, None),
            meta=meta,
        ))
    if not out:
        raise DataError(path, None, None, "no passages in file")
    return out


def read_raw_documents(dataset_dir: str | Path) -> list[Passage]:
    """A dataset's original documents (``<dataset_dir>/corpus_raw.jsonl``: Graph-Bench Medical is one
    document, Novel twenty), untitled, as ``index(folder)`` reads a plain-text file: the record's
    title is its corpus's name, not a title the text carries."""
    path = Path(dataset_dir) / "corpus_raw.jsonl"
    if not path.is_file():
        raise DatasetMissing(f"{path}: no raw documents; only the Graph-Bench datasets ship corpus_raw.jsonl")
    return [dataclasses.replace(p, title="", corpus=p.corpus or p.id) for p in read_passages_jsonl(path)]


def read_questions_jsonl(path: str | Path) -> list[Question]:
    """Read a normalized questions file (``id, question, answers[], ...``), strictly."""
    path = Path(path)
    ids = IdRegistry("question")
    out: list[Question] = []
    for lineno, obj in iter_jsonl(path):
        w = Where(path, lineno)
        qid = nonempty_str(obj, "id", w)
        ids.add(qid, "id", w)
        meta = dict(optional(obj, "meta", (dict,), w, {}))
        meta.update({k: v for k, v in obj.items() if k not in QUESTION_FIELDS})
        out.append(Question(
            id=qid,
            question=nonempty_str(obj, "question", w),
            answers=str_list(obj, "answers", w, required=True),
            question_type=optional(obj, "question_type", (str,), w, ""),
            supporting_ids=str_list(obj, "supporting_ids", w, required=False),
            evidence=obj.get("evidence"),
            corpus=optional(obj, "corpus", (str,), w, None),
            meta=meta,
        ))
    if not out:
        raise DataError(path, None, None, "no questions in file")
    return out


def _warn_unknown_support(questions: list[Question], passages: list[Passage], cfile: Path) -> None:
    # Recall@k against ids that are not in the corpus would be silently capped; say so once.
    known = {p.id for p in passages}
    missing = sum(1 for q in questions for s in q.supporting_ids if s not in known)
    if missing:
        log.warning("%d supporting ids of the questions are not passages of %s; recall will be capped",
                    missing, cfile)


class DatasetMissing(FileNotFoundError):
    """A configured dataset is not on disk; the message says how to get it."""


def get_hint(cfg: DatasetConfig) -> str:
    """How a user gets dataset ``cfg``: the ``atomicrag data get`` command (a normalised dataset
    named by the project), or where to point ``dataset.path``/``paths.data_dir``."""
    if cfg.path:
        return f" Check dataset.path={cfg.path}."
    return (f" Get it with: atomicrag data get {cfg.name}  (or point paths.data_dir / dataset.path at a "
            "copy; the smoke sets ship with atomicrag: dataset.split=smoke)")


def check_present(cfg: DatasetConfig, data_dir: Path) -> None:
    """Raise ``DatasetMissing`` (with the command that gets it) before any work when the questions
    of a normalised dataset are not on disk; other formats are checked by their loaders."""
    if cfg.format != "normalized":
        return
    qfile, _ = normalized_files(cfg, data_dir)
    if not qfile.is_file():
        raise DatasetMissing(f"dataset {cfg.name!r} split {cfg.split!r}: {qfile} not found.{get_hint(cfg)}")


def split_files(name: str, split: str, data_dir: str | Path = "auto") -> tuple[Path, Path]:
    """(questions file, corpus file) of a normalised dataset's split, found where a run finds it
    (``paths.data_dir``; ``auto``: ./data, ../shared/data beside a checkout, then the smoke sets that
    ship with atomicrag). Scripts default to this, so a clone anywhere runs them. Raises
    ``DatasetMissing`` naming the file and how to get it when the split is not on disk."""
    cfg = DatasetConfig(name=name, split=split)
    data = PathsConfig(data_dir=str(data_dir)).resolved_data_dir(dataset=cfg)
    check_present(cfg, data)
    return normalized_files(cfg, data)


def _listing(folder: Path) -> str:
    if not folder.is_dir():
        return f" (folder {folder} does not exist)"
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    return f" ({folder} has: {', '.join(names) or 'nothing'})"
