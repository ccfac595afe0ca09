"""Loader for Hugging Face ``datasets`` tables (local files, ``save_to_disk`` folders, hub ids).

Columns are found by their common names, so FlashRAG-style corpora (``contents``), BEIR-style
ids (``_id``) and HotpotQA-style questions load without a mapping; representation is lenient
(integer ids, a single answer string), content is not (empty text, duplicate ids fail).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from atomicrag.core.config import DatasetConfig
from atomicrag.core.schemas import Passage, Question
from atomicrag.data.formats import ID_PREFIX, Loaded
from atomicrag.data.validate import (
    DataError,
    IdRegistry,
    Where,
    check_type,
    coerce_answers,
    coerce_id,
    nonempty_str,
    optional,
)

QUESTION_COLUMNS: dict[str, tuple[str, ...]] = {
    "id": ("id", "_id", "qid", "question_id"),
    "question": ("question", "query", "question_text"),
    "answers": ("answers", "answer", "golden_answers", "possible_answers"),
    "question_type": ("question_type", "type"),
    "supporting_ids": ("supporting_ids",),
    "evidence": ("evidence", "evidences"),
    "corpus": ("corpus", "source"),
}
CORPUS_COLUMNS: dict[str, tuple[str, ...]] = {
    "id": ("id", "_id", "doc_id", "docid", "passage_id", "pid"),
    "title": ("title",),
    "text": ("text", "contents", "passage", "paragraph_text", "context", "content"),
    "corpus": ("corpus", "corpus_name"),
}


def load_hf(cfg: DatasetConfig, data_dir: Path, require_corpus: bool) -> Loaded:
    """Questions from ``cfg.hf_questions`` (or ``cfg.path``), corpus from ``cfg.hf_corpus``.

    Each may be a local data file (.jsonl/.json/.parquet/.csv), a ``save_to_disk`` folder, a
    folder of data files, or a hub id (``"org/name"`` or ``"org/name:config"``; needs network).
    Columns are found by common names (``QUESTION_COLUMNS`` / ``CORPUS_COLUMNS``). A table with
    several splits is narrowed to ``cfg.split`` (or its only split).
    """
    q_spec = cfg.hf_questions or cfg.path
    if not q_spec:
        raise ValueError("dataset.format=hf needs dataset.hf_questions (a local file/folder or a hub id)")
    q_label, q_rows = _hf_rows(q_spec, cfg, data_dir)
    passages: list[Passage] = []
    if cfg.hf_corpus:
        c_label, c_rows = _hf_rows(cfg.hf_corpus, cfg, data_dir)
        passages = _hf_passages(c_label, c_rows, cfg.name)
    elif require_corpus:
        raise ValueError(f"dataset {cfg.name!r}: format=hf needs dataset.hf_corpus "
                         "(or load with require_corpus=False for questions only)")
    files = [Path(x) for x in (cfg.hf_corpus, q_spec) if x and Path(x).exists()]
    return passages, _hf_questions(q_label, q_rows), files


def _hf_rows(spec: str, cfg: DatasetConfig, data_dir: Path) -> tuple[str, Any]:
    import datasets

    local = next((p for p in (Path(spec).expanduser(), data_dir / cfg.name / spec, data_dir / spec)
                  if p.exists()), None)
    if local is not None and local.is_file():
        builder = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}.get(local.suffix)
        if builder is None:
            raise ValueError(f"{local}: unsupported data file type {local.suffix!r} (jsonl, json, parquet, csv)")
        try:
            ds: Any = datasets.load_dataset(builder, data_files=str(local), split="train")
        except Exception as exc:  # arrow's JSON errors do not say which file; we do
            raise DataError(local, None, None, f"cannot be read as {builder}: {exc}") from exc
    elif local is not None and ((local / "dataset_info.json").is_file() or (local / "dataset_dict.json").is_file()):
        ds = datasets.load_from_disk(str(local))
    elif local is not None:
        ds = datasets.load_dataset(str(local))
    else:
        name, _, config = spec.partition(":")
        ds = datasets.load_dataset(name, config or None)
    label = str(local) if local is not None else f"hf://{spec}"
    if isinstance(ds, (datasets.DatasetDict, dict)):
        if cfg.split in ds:
            ds, label = ds[cfg.split], f"{label}[{cfg.split}]"
        elif len(ds) == 1:
            ds = next(iter(ds.values()))
        else:
            raise ValueError(f"{label}: split {cfg.split!r} not found; splits: {', '.join(ds)}")
    return label, ds


def _column(names: Iterable[str], mapping: dict[str, tuple[str, ...]], field: str) -> str | None:
    names = set(names)
    return next((c for c in mapping[field] if c in names), None)


def _hf_passages(label: str, rows: Any, name: str) -> list[Passage]:
    cols = {f: _column(rows.column_names, CORPUS_COLUMNS, f) for f in CORPUS_COLUMNS}
    if cols["text"] is None:
        raise DataError(label, None, "text", f"no text column among {rows.column_names}")
    prefix = ID_PREFIX.get(name, name)
    ids = IdRegistry("passage")
    out = []
    for i, row in enumerate(rows):
        w = Where(label, i + 1, unit="row")
        pid = coerce_id(row[cols["id"]], cols["id"], w) if cols["id"] else f"{prefix}-{i:05d}"
        ids.add(pid, cols["id"] or "id", w)
        title = optional(row, cols["title"], (str,), w, "") if cols["title"] else ""
        corpus = optional(row, cols["corpus"], (str,), w, None) if cols["corpus"] else None
        out.append(Passage(id=pid, title=title, text=nonempty_str(row, cols["text"], w), corpus=corpus))
    return out


def _hf_questions(label: str, rows: Any) -> list[Question]:
    cols = {f: _column(rows.column_names, QUESTION_COLUMNS, f) for f in QUESTION_COLUMNS}
    for need in ("id", "question"):
        if cols[need] is None:
            raise DataError(label, None, need, f"no {need} column among {rows.column_names}")
    used = {c for c in cols.values() if c}
    ids = IdRegistry("question")
    out = []
    for i, row in enumerate(rows):
        w = Where(label, i + 1, unit="row")
        qid = coerce_id(row[cols["id"]], cols["id"], w)
        ids.add(qid, cols["id"], w)
        answers = coerce_answers(row.get(cols["answers"]), cols["answers"], w) if cols["answers"] else []
        support: list[str] = []
        if cols["supporting_ids"] and row.get(cols["supporting_ids"]) is not None:
            raw = check_type(row[cols["supporting_ids"]], cols["supporting_ids"], (list,), w)
            support = [coerce_id(s, cols["supporting_ids"], w) for s in raw]
        qtype = row.get(cols["question_type"]) if cols["question_type"] else ""
        corpus = row.get(cols["corpus"]) if cols["corpus"] else None
        out.append(Question(
            id=qid, question=nonempty_str(row, cols["question"], w), answers=answers,
            question_type=qtype if isinstance(qtype, str) else str(qtype),
            supporting_ids=support,
            evidence=row.get(cols["evidence"]) if cols["evidence"] else None,
            corpus=corpus if isinstance(corpus, str) else None,
            meta={k: v for k, v in row.items() if k not in used},
        ))
    return out
