"""Loaders for the public layouts (GraphRAG-Bench, HippoRAG, Hugging Face) on hand-made files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atomicrag.core.config import DatasetConfig
from atomicrag.data import DataError, load_dataset


def _dump(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1))
    return path


# ----------------------------------------------------------------------------- GraphRAG-Bench
def _graphrag_bench(root: Path) -> None:
    _dump(root / "Datas" / "Corpus" / "novel.json", [
        {"corpus_name": "Novel-1", "context": "Alice met the kinnor player in the town square."},
        {"corpus_name": "Novel-2", "context": "Bob sailed to the island of Thule."},
    ])
    _dump(root / "Datas" / "Questions" / "novel_questions.json", [
        {"id": "Novel-q1", "source": "Novel-1", "question": "Whom did Alice meet?", "answer": "the kinnor player",
         "question_type": "Fact Retrieval", "evidence": "Alice met the kinnor player.", "evidence_triple": "(a,b,c)"},
        # the public file reuses an id across novels: two different questions
        {"id": "Novel-q2", "source": "Novel-1", "question": "Where was Alice?", "answer": "the town square",
         "question_type": "Fact Retrieval", "evidence": ""},
        {"id": "Novel-q2", "source": "Novel-2", "question": "Where did Bob sail?", "answer": "Thule",
         "question_type": "Complex Reasoning", "evidence": ""},
    ])
    _dump(root / "Datas" / "Corpus" / "medical.json", {"corpus_name": "Medical", "context": "Basal cell skin cancer."})
    _dump(root / "Datas" / "Questions" / "medical_questions.json", [
        {"id": "Medical-1", "source": "Medical", "question": "What is BCC?", "answer": "A skin cancer",
         "question_type": "Fact Retrieval", "evidence": "x"}])


def test_graphrag_bench_layout(tmp_path: Path) -> None:
    _graphrag_bench(tmp_path / "gb")
    ds = load_dataset(DatasetConfig(name="graphbench_novel", format="graphrag_bench", reader="abstract",
                                    path=str(tmp_path / "gb")), tmp_path)
    assert [p.id for p in ds.passages] == ["Novel-1", "Novel-2"]
    assert ds.passages[0].corpus == "Novel-1" and ds.reader == "abstract"
    q = {x.id: x for x in ds.questions}
    assert set(q) == {"Novel-q1", "Novel-q2@Novel-1", "Novel-q2@Novel-2"}
    assert q["Novel-q1"].answers == ["the kinnor player"] and q["Novel-q1"].corpus == "Novel-1"
    assert q["Novel-q1"].meta["evidence_triple"] == "(a,b,c)"
    assert q["Novel-q2@Novel-2"].meta["original_id"] == "Novel-q2"
    med = load_dataset(DatasetConfig(name="medical", format="graphrag_bench", path=str(tmp_path / "gb")), tmp_path)
    assert [p.id for p in med.passages] == ["Medical"] and med.questions[0].corpus == "Medical"


def test_graphrag_bench_bad_record_is_located(tmp_path: Path) -> None:
    _graphrag_bench(tmp_path / "gb")
    qfile = tmp_path / "gb" / "Datas" / "Questions" / "medical_questions.json"
    _dump(qfile, [{"id": "m1", "question": "ok?", "answer": "y"}, {"id": "m2", "answer": "n"}])
    with pytest.raises(DataError, match=r"medical_questions\.json: record 2: field 'question': missing"):
        load_dataset(DatasetConfig(name="medical", format="graphrag_bench", path=str(tmp_path / "gb")), tmp_path)


# ----------------------------------------------------------------------------- HippoRAG
def test_hipporag_2wiki_style(tmp_path: Path) -> None:
    _dump(tmp_path / "2wikimultihopqa" / "2wikimultihopqa_corpus.json", [
        {"title": "Frank Borzage", "text": "Frank Borzage was born April 23, 1894."},
        {"title": "No Greater Glory", "text": "No Greater Glory is a film directed by Frank Borzage."},
        {"title": "Distractor", "text": "Unrelated."},
    ])
    _dump(tmp_path / "2wikimultihopqa" / "2wikimultihopqa.json", [{
        "_id": "abc", "type": "compositional", "question": "When was the director of No Greater Glory born?",
        "answer": "April 23, 1894", "supporting_facts": [["No Greater Glory", 0], ["Frank Borzage", 0]],
        "context": [["No Greater Glory", ["No Greater Glory is a film directed by Frank Borzage."]]],
        "evidences": [["No Greater Glory", "director", "Frank Borzage"]],
    }])
    ds = load_dataset(DatasetConfig(name="2wikimultihopqa", format="hipporag"), tmp_path)
    # same ids as the normalized copy: "2wiki-" + 0-based position
    assert [p.id for p in ds.passages] == ["2wiki-00000", "2wiki-00001", "2wiki-00002"]
    q = ds.questions[0]
    assert q.id == "abc" and q.question_type == "compositional" and q.answers == ["April 23, 1894"]
    assert q.supporting_ids == ["2wiki-00001", "2wiki-00000"]
    assert q.evidence == [["No Greater Glory", "director", "Frank Borzage"]]


def test_hipporag_musique_style_duplicate_titles(tmp_path: Path) -> None:
    _dump(tmp_path / "musique_corpus.json", [
        {"title": "Paris", "text": "Paris is the capital of France.", "idx": 0},
        {"title": "Paris", "text": "Paris is a figure of Greek mythology.", "idx": 1},
    ])
    qfile = _dump(tmp_path / "musique.json", [{
        "id": "2hop__1_2", "question": "Who abducted Helen?", "answer": "Paris", "answer_aliases": ["Alexandros"],
        "paragraphs": [
            {"title": "Paris", "paragraph_text": "Paris is the capital of France.", "is_supporting": False},
            {"title": "Paris", "paragraph_text": "Paris is a figure of Greek mythology.", "is_supporting": True},
        ],
    }])
    ds = load_dataset(DatasetConfig(name="musique", format="hipporag", path=str(qfile)), tmp_path)
    q = ds.questions[0]
    assert q.answers == ["Paris", "Alexandros"]
    assert q.supporting_ids == ["musique-00001"]  # the text, not the first title match, decides


def test_hipporag_empty_corpus_text_is_located(tmp_path: Path) -> None:
    _dump(tmp_path / "x_corpus.json", [{"title": "a", "text": "fine"}, {"title": "b", "text": ""}])
    qfile = _dump(tmp_path / "x.json", [{"id": "q", "question": "?", "answer": "a"}])
    with pytest.raises(DataError, match=r"x_corpus\.json: record 2: field 'text': empty text"):
        load_dataset(DatasetConfig(name="x", format="hipporag", path=str(qfile)), tmp_path)


def test_hipporag_duplicate_question_id(tmp_path: Path) -> None:
    _dump(tmp_path / "x_corpus.json", [{"title": "a", "text": "fine"}])
    qfile = _dump(tmp_path / "x.json", [{"_id": "q", "question": "?", "answer": "a"},
                                        {"_id": "q", "question": "again?", "answer": "b"}])
    with pytest.raises(DataError, match=r"record 2: field '_id': duplicate question id 'q' \(first at record 1\)"):
        load_dataset(DatasetConfig(name="x", format="hipporag", path=str(qfile)), tmp_path)


# ----------------------------------------------------------------------------- Hugging Face
@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return tmp_path


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_hf_local_jsonl_and_saved_dataset(hf_cache: Path) -> None:
    import datasets

    corpus = _jsonl(hf_cache / "corpus.jsonl", [{"doc_id": 1, "title": "A", "contents": "alpha text"},
                                                {"doc_id": 2, "title": "B", "contents": "beta text"}])
    questions = _jsonl(hf_cache / "q.jsonl", [{"_id": "q1", "query": "alpha?", "answer": "alpha",
                                               "type": "bridge", "level": "hard"}])
    cfg = DatasetConfig(name="mine", format="hf", hf_corpus=str(corpus), hf_questions=str(questions))
    ds = load_dataset(cfg, hf_cache)
    assert [(p.id, p.title, p.text) for p in ds.passages] == [("1", "A", "alpha text"), ("2", "B", "beta text")]
    q = ds.questions[0]
    assert (q.id, q.question, q.answers, q.question_type) == ("q1", "alpha?", ["alpha"], "bridge")
    assert q.meta == {"level": "hard"}
    # a save_to_disk DatasetDict: the configured split is picked
    saved = hf_cache / "saved"
    datasets.DatasetDict({
        "dev": datasets.Dataset.from_list([{"id": "d1", "question": "dev?", "answers": ["x"]}]),
        "test": datasets.Dataset.from_list([{"id": "t1", "question": "test?", "answers": ["y"]}]),
    }).save_to_disk(str(saved))
    ds2 = load_dataset(DatasetConfig(name="mine", format="hf", split="test", hf_questions=str(saved)), hf_cache,
                       require_corpus=False)
    assert [q.id for q in ds2.questions] == ["t1"] and ds2.passages == []


def test_hf_bad_rows_are_located(hf_cache: Path) -> None:
    corpus = _jsonl(hf_cache / "corpus.jsonl", [{"id": "a", "text": "ok"}, {"id": "b", "text": " "}])
    questions = _jsonl(hf_cache / "q.jsonl", [{"id": "q1", "question": "?"}])
    cfg = DatasetConfig(name="m", format="hf", hf_corpus=str(corpus), hf_questions=str(questions))
    with pytest.raises(DataError, match=r"corpus\.jsonl: row 2: field 'text': empty text"):
        load_dataset(cfg, hf_cache)
    with pytest.raises(ValueError, match="hf_corpus"):
        load_dataset(DatasetConfig(name="m", format="hf", hf_questions=str(questions)), hf_cache)
