"""The normalized loader on the real shared data, and its error reports on broken files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from atomicrag.core.config import DatasetConfig, PathsConfig
from atomicrag.data import DataError, Dataset, load_dataset

DEV = DatasetConfig(name="2wikimultihopqa", split="dev")
DATA_DIR = PathsConfig().resolved_data_dir(dataset=DEV)  # the full data when present, else the shipped smoke sets
# the DEV split and MuSiQue come from `atomicrag data get` (or ../shared/data beside a checkout)
needs_shared = pytest.mark.skipif(not (DATA_DIR / "2wikimultihopqa" / "questions.dev.jsonl").is_file()
                                  or not (DATA_DIR / "musique").is_dir(),
                                  reason="the full 2Wiki DEV split and MuSiQue are not present (atomicrag data get)")


def test_2wiki_smoke_set_loads_with_gold_in_corpus() -> None:
    ds = load_dataset(DatasetConfig(name="2wikimultihopqa", split="smoke"), DATA_DIR)
    assert isinstance(ds, Dataset)
    assert len(ds.passages) == 130 and len(ds.questions) == 20
    ids = {p.id for p in ds.passages}
    assert all(s in ids for q in ds.questions for s in q.supporting_ids)
    assert all(q.answers and q.supporting_ids for q in ds.questions)
    assert {q.question_type for q in ds.questions} == {"bridge_comparison", "comparison", "compositional", "inference"}
    assert ds.reader == "precise" and ds.passages[0].title
    assert ds.fingerprint() == load_dataset(DatasetConfig(split="smoke"), DATA_DIR).fingerprint()


@needs_shared
def test_dev_split_limit_and_corpus_override() -> None:
    ds = load_dataset(DatasetConfig(split="dev", limit=5, corpus_file="corpus_atomicrag_chunks.jsonl"), DATA_DIR)
    assert len(ds.questions) == 5
    assert len(ds.passages) == 2309 and ds.passages[0].id.startswith("2wiki-achunk-")


@needs_shared
def test_questions_only_dataset_needs_explicit_opt_in() -> None:
    cfg = DatasetConfig(name="musique", split="dev")
    with pytest.raises(FileNotFoundError, match="questions only"):
        load_dataset(cfg, DATA_DIR)
    ds = load_dataset(cfg, DATA_DIR, require_corpus=False)
    assert ds.passages == [] and len(ds.questions) == 667


def test_unknown_split_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="split 'train'"):
        load_dataset(DatasetConfig(name="x", split="train"), tmp_path)


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _good_corpus() -> list[str]:
    return [json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"text {i}"}) for i in range(3)]


def _good_questions() -> list[str]:
    return [json.dumps({"id": f"q{i}", "question": f"what {i}?", "answers": ["a"], "supporting_ids": ["p0"]})
            for i in range(3)]


def test_explicit_questions_file_path(tmp_path: Path) -> None:
    _write(tmp_path / "mine" / "corpus.jsonl", _good_corpus())
    _write(tmp_path / "mine" / "my_questions.jsonl", _good_questions())
    ds = load_dataset(DatasetConfig(name="mine", path=str(tmp_path / "mine" / "my_questions.jsonl")), tmp_path)
    assert [p.id for p in ds.passages] == ["p0", "p1", "p2"] and len(ds.questions) == 3


BAD_CASES = {
    # name: (file, line index to replace, replacement, expected line, expected field, message fragment)
    "bad json line": ("corpus", 1, '{"id": "p1", "text": ', 2, None, "invalid JSON"),
    "missing field": ("corpus", 2, json.dumps({"id": "p2", "title": "T"}), 3, "text", "missing required field"),
    "empty text": ("corpus", 0, json.dumps({"id": "p0", "text": "   "}), 1, "text", "empty text"),
    "duplicate id": ("corpus", 2, json.dumps({"id": "p0", "text": "again"}), 3, "id", "duplicate passage id 'p0'"),
    "wrong type": ("questions", 1, json.dumps({"id": "q1", "question": "x?", "answers": "a"}), 2, "answers",
                   "expected list, got str"),
    "wrong item type": ("questions", 0, json.dumps({"id": "q0", "question": "x?", "answers": [3]}), 1,
                        "answers[0]", "expected string"),
    "numeric id": ("questions", 2, json.dumps({"id": 7, "question": "x?", "answers": []}), 3, "id",
                   "expected string, got int"),
    "missing question": ("questions", 0, json.dumps({"id": "q0", "answers": []}), 1, "question", "missing"),
    "not an object": ("questions", 1, "[1, 2]", 2, None, "expected a JSON object"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_malformed_files_name_file_line_and_field(tmp_path: Path, case: str) -> None:
    which, idx, replacement, line, field, fragment = BAD_CASES[case]
    corpus, questions = _good_corpus(), _good_questions()
    (corpus if which == "corpus" else questions)[idx] = replacement
    root = tmp_path / "broken" / "smoke"
    _write(root / "corpus.jsonl", corpus)
    _write(root / "questions.jsonl", questions)
    with pytest.raises(DataError) as err:
        load_dataset(DatasetConfig(name="broken", split="smoke"), tmp_path)
    bad_file = root / ("corpus.jsonl" if which == "corpus" else "questions.jsonl")
    msg = str(err.value)
    assert f"{bad_file}:{line}:" in msg, msg
    assert fragment in msg
    assert err.value.line == line and err.value.field == field
    if field:
        assert repr(field) in msg
    assert isinstance(err.value, ValueError)


def test_raw_documents_are_untitled_and_a_missing_file_is_named(tmp_path: Path) -> None:
    """Graph-Bench's original documents, read as a user's files are: no title, one corpus each."""
    from atomicrag.data.loaders import DatasetMissing, read_raw_documents

    folder = tmp_path / "graphbench_novel"
    folder.mkdir()
    with pytest.raises(DatasetMissing, match="corpus_raw.jsonl"):
        read_raw_documents(folder)
    (folder / "corpus_raw.jsonl").write_text(
        '{"id": "Novel-1", "title": "Novel-1", "text": "It was a dark night."}\n'
        '{"id": "Novel-2", "title": "Novel-2", "text": "The ship sailed.", "corpus": "Novel-2"}\n')
    docs = read_raw_documents(folder)
    assert [(d.id, d.title, d.corpus) for d in docs] == [("Novel-1", "", "Novel-1"), ("Novel-2", "", "Novel-2")]
    (folder / "corpus_raw.jsonl").write_text('{"id": "x"}\n')
    with pytest.raises(DataError, match="text"):  # strict: a document without text names the field
        read_raw_documents(folder)
