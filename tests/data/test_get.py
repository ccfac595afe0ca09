"""`atomicrag data get DATASET --from DIR` on small copies of each source in its own format
(tests/data/fixtures/get/, see its README.md), and the download path (resume, checksums, offline)."""
from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from atomicrag.core.config import DatasetConfig
from atomicrag.data import fetch
from atomicrag.data.fetch import SourceError, git_blob_id
from atomicrag.data.get import get_dataset
from atomicrag.data.loaders import load_dataset
from atomicrag.data.sources import FILES, REPOS, SourceFile
from atomicrag.library.cli import main

FIX = Path(__file__).parent / "fixtures" / "get"
ATOM = FIX / "AtomicRAG"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _check_layout(out: Path, name: str, smoke: bool = True) -> None:
    """dev/heldout partition the questions; smoke questions are DEV ones whose support is in the smoke
    corpus; every split loads with the project's strict loader."""
    qs = _jsonl(out / name / "questions.jsonl")
    dev = {q["id"] for q in _jsonl(out / name / "questions.dev.jsonl")}
    held = {q["id"] for q in _jsonl(out / name / "questions.heldout.jsonl")}
    assert dev and held and not dev & held and dev | held == {q["id"] for q in qs}
    splits = ["dev", "heldout", "all"]
    if smoke:
        sq = _jsonl(out / name / "smoke" / "questions.jsonl")
        sc = {c["id"] for c in _jsonl(out / name / "smoke" / "corpus.jsonl")}
        assert sq and {q["id"] for q in sq} <= dev
        assert all(s in sc for q in sq for s in q["supporting_ids"])
        splits.append("smoke")
    for split in splits:
        ds = load_dataset(DatasetConfig(name=name, split=split), out)
        assert ds.questions and ds.passages


def test_medical_from_released_files(tmp_path: Path) -> None:
    summary = get_dataset("graphbench_medical", out_dir=tmp_path, source_dir=FIX, progress=False)
    out = tmp_path / "graphbench_medical"
    chunks = _json(ATOM / "dataset/medical/Medical/chunks.json")
    corpus = _jsonl(out / "corpus.jsonl")
    # chunks kept byte for byte, ids by position, one corpus
    assert corpus == [{"id": f"medical-c{i:04d}", "title": "", "text": t, "corpus": "Medical"}
                      for i, t in enumerate(chunks)]
    src = _json(ATOM / "dataset/medical/Medical/questions.json")
    relations = {r["id"]: r["evidence_relations"] for r in pq.read_table(
        ATOM / "datasets/atomicrag/abstract_qa/Questions/medical_questions.parquet").to_pylist()}
    github = {r["id"]: r["answer"] for r in _json(FIX / "GraphRAG-Benchmark/Datas/Questions/medical_questions.json")}
    qs = _jsonl(out / "questions.jsonl")
    assert [q["id"] for q in qs] == [s["id"] for s in src]
    for q, s in zip(qs, src):
        assert q["question"] == s["question"] and q["answers"] == [s["answer"]]
        assert q["question_type"] == s["question_type"] and q["evidence"] == s["evidence"]
        assert q["supporting_ids"] == [] and q["corpus"] == "Medical"
        assert q["meta"]["source"] == s["source"] and q["meta"]["evidence_relations"] == relations[s["id"]]
        # the GitHub answer is kept only where the authors' revised answer differs from it
        assert q["meta"].get("graphrag_bench_github_answer") == (github[s["id"]] if github[s["id"]] != s["answer"]
                                                                 else None)
    assert 0 < sum("graphrag_bench_github_answer" in q["meta"] for q in qs) < len(qs)
    raw = _jsonl(out / "corpus_raw.jsonl")
    assert raw[0]["id"] == "Medical" and raw[0]["text"] == _json(FIX / "GraphRAG-Benchmark/Datas/Corpus/medical.json")[0]["context"]
    _check_layout(tmp_path, "graphbench_medical")
    # the fixture files are not the pinned release bytes: said, and recorded
    assert len(summary["not_pinned"]) == 5
    assert not any(f["pinned_revision"] for f in _json(out / "sources.json")["files"])


def test_novel_keeps_one_corpus_per_novel_and_renames_the_clashing_id(tmp_path: Path) -> None:
    get_dataset("graphbench_novel", out_dir=tmp_path, source_dir=FIX, progress=False)
    out = tmp_path / "graphbench_novel"
    corpus = _jsonl(out / "corpus.jsonl")
    for novel in ("Novel-4128", "Novel-47558"):
        chunks = _json(ATOM / f"dataset/novel/{novel}/chunks.json")
        assert [c for c in corpus if c["corpus"] == novel] == [
            {"id": f"{novel}-c{i:04d}", "title": "", "text": t, "corpus": novel} for i, t in enumerate(chunks)]
    qs = {q["id"]: q for q in _jsonl(out / "questions.jsonl")}
    assert "Novel-55f0c0e2" not in qs
    for novel in ("Novel-4128", "Novel-47558"):
        q = qs[f"Novel-55f0c0e2@{novel}"]
        assert q["corpus"] == novel and q["meta"]["original_id"] == "Novel-55f0c0e2" and q["meta"]["known_issue"]
    triples = {(r["id"], r["source"]): r["evidence_triple"] for r in pq.read_table(
        ATOM / "datasets/atomicrag/abstract_qa/Questions/novel_questions.parquet").to_pylist()}
    for q in qs.values():
        assert q["meta"]["evidence_triple"] == triples[(q["meta"].get("original_id", q["id"]), q["corpus"])]
    smoke = _jsonl(out / "smoke" / "questions.jsonl")
    assert len({q["corpus"] for q in smoke}) == 1 and not any("@" in q["id"] for q in smoke)
    assert {r["id"] for r in _jsonl(out / "corpus_raw.jsonl")} == {"Novel-4128", "Novel-47558"}
    _check_layout(tmp_path, "graphbench_novel")


def test_2wiki_derived_gold_matches_an_independent_gold_sample(tmp_path: Path) -> None:
    get_dataset("2wikimultihopqa", out_dir=tmp_path, source_dir=FIX, progress=False)
    out = tmp_path / "2wikimultihopqa"
    hippo = _json(FIX / "HippoRAG/reproduce/dataset/2wikimultihopqa_corpus.json")
    assert _jsonl(out / "corpus.jsonl") == [{"id": f"2wiki-{i:05d}", "title": p["title"], "text": p["text"]}
                                           for i, p in enumerate(hippo)]
    independent = _json(FIX / "gold_validation_slice.json")["gold"]
    qs = _jsonl(out / "questions.jsonl")
    src = _json(ATOM / "dataset/2wikimultihop/2WikiMultiHop/questions.json")
    assert [q["id"] for q in qs] == [s["id"] for s in src] and len(independent) == len(qs) == 16
    for q, s in zip(qs, src):
        assert sorted(q["supporting_ids"]) == sorted(independent[q["id"]]), q["id"]
        assert q["answers"] == [s["answer"]] and q["evidence"] == s["evidence"]
        assert q["question_type"] == s["question_type"] and q["corpus"] == "2wikimultihopqa"
        assert len(q["meta"]["gold_match_methods"]) == len(q["supporting_ids"])
    # not only title-identical subjects: one needs the fuzzy stage
    assert any(m.startswith("fuzzy_window") for q in qs for m in q["meta"]["gold_match_methods"])
    chunks = _json(ATOM / "dataset/2wikimultihop/2WikiMultiHop/chunks.json")
    assert [c["text"] for c in _jsonl(out / "corpus_atomicrag_chunks.jsonl")] == chunks
    _check_layout(tmp_path, "2wikimultihopqa")


def test_musique_gold_and_aliases_from_hipporag_files(tmp_path: Path) -> None:
    get_dataset("musique", out_dir=tmp_path, source_dir=FIX, progress=False)
    out = tmp_path / "musique"
    hippo = {r["id"]: r for r in _json(FIX / "HippoRAG/reproduce/dataset/musique.json")}
    corpus = {(c["title"], c["text"]): c["id"] for c in _jsonl(out / "corpus.jsonl")}
    for q in _jsonl(out / "questions.jsonl"):
        h = hippo[q["id"].removeprefix("musique_")]
        assert q["supporting_ids"] == [corpus[(p["title"], p["paragraph_text"])] for p in h["paragraphs"]
                                       if p["is_supporting"]]
        assert q["answers"] == [h["answer"]] + [a for a in h["answer_aliases"] if a != h["answer"]]
        assert q["meta"]["hop_type"] == q["id"].removeprefix("musique_").split("__")[0]
    assert any(len(q["answers"]) > 1 for q in _jsonl(out / "questions.jsonl"))  # aliases were added
    _check_layout(tmp_path, "musique", smoke=False)


def test_hotpotqa_gold_from_supporting_fact_titles(tmp_path: Path) -> None:
    get_dataset("hotpotqa", out_dir=tmp_path, source_dir=FIX, progress=False)
    out = tmp_path / "hotpotqa"
    src = _json(FIX / "HippoRAG/reproduce/dataset/hotpotqa.json")
    hippo = _json(FIX / "HippoRAG/reproduce/dataset/hotpotqa_corpus.json")
    corpus = _jsonl(out / "corpus.jsonl")
    assert corpus == [{"id": f"hotpotqa-{i:05d}", "title": p["title"], "text": p["text"]} for i, p in enumerate(hippo)]
    title_id = {c["title"]: c["id"] for c in corpus}
    for q, s in zip(_jsonl(out / "questions.jsonl"), src):
        assert q["id"] == s["_id"] and q["answers"] == [s["answer"]] and q["question_type"] == s["type"]
        titles = list(dict.fromkeys(f[0] for f in s["supporting_facts"]))  # distinct, first-seen order
        assert q["supporting_ids"] == [title_id[t] for t in titles]
    _check_layout(tmp_path, "hotpotqa", smoke=False)


def test_questions_only_musique_without_hipporag_files(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ATOM / "dataset/musique", src / "dataset/musique")
    get_dataset("musique", out_dir=tmp_path / "out", source_dir=src, progress=False)
    qs = _jsonl(tmp_path / "out/musique/questions.jsonl")
    assert len(qs) == 6 and all(q["supporting_ids"] == [] and not q["meta"]["gold_available"] for q in qs)
    assert not (tmp_path / "out/musique/corpus.jsonl").exists()


def test_a_rebuild_replaces_the_folder_and_a_foreign_folder_is_kept(tmp_path: Path) -> None:
    get_dataset("musique", out_dir=tmp_path, source_dir=FIX, progress=False)
    assert (tmp_path / "musique/corpus.jsonl").is_file()
    src = tmp_path / "src"
    shutil.copytree(ATOM / "dataset/musique", src / "dataset/musique")
    get_dataset("musique", out_dir=tmp_path, source_dir=src, progress=False)  # now questions only
    assert not (tmp_path / "musique/corpus.jsonl").exists()  # no stale corpus from the first build
    assert sorted(p.name for p in tmp_path.iterdir()) == ["musique", "src"]  # no partial/old folders left
    (tmp_path / "mine" / "musique").mkdir(parents=True)
    (tmp_path / "mine" / "musique" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not written by `atomicrag data get`"):
        get_dataset("musique", out_dir=tmp_path / "mine", source_dir=FIX, progress=False)
    assert (tmp_path / "mine/musique/notes.txt").read_text() == "keep me"


def test_cli_names_the_missing_file_and_its_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    rc = main(["data", "get", "2wikimultihopqa", "--from", str(tmp_path / "empty"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "2wikimultihopqa_corpus.json" in err and "https://raw.githubusercontent.com/OSU-NLP-Group/HippoRAG/" in err
    assert "licence" in err  # printed before anything is fetched


def test_a_generic_file_name_is_not_taken_from_another_dataset(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # another corpus folder with its own chunks.json and questions.json must not pass for Medical's
    other = tmp_path / "Musique"
    other.mkdir()
    shutil.copy(ATOM / "dataset/medical/Medical/chunks.json", other / "chunks.json")
    shutil.copy(ATOM / "dataset/musique/Musique/questions.json", other / "questions.json")
    rc = main(["data", "get", "graphbench_medical", "--from", str(other), "--out", str(tmp_path / "out")])
    assert rc == 2 and "dataset/medical/Medical/chunks.json" in capsys.readouterr().err
    assert not (tmp_path / "out" / "graphbench_medical").exists()


def test_strict_refuses_files_that_are_not_the_pinned_revision(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="not dataset/musique/Musique/questions.json|pinned revision"):
        get_dataset("musique", out_dir=tmp_path, source_dir=FIX, progress=False, strict=True)


def test_cli_builds_from_a_copy_of_the_dataset_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a copy of the released repository's dataset/ folder alone (no repository root above it)
    shutil.copytree(ATOM / "dataset", tmp_path / "dataset")
    rc = main(["-q", "data", "get", "graphbench_medical", "--from", str(tmp_path / "dataset"),
               "--out", str(tmp_path / "data")])
    assert rc == 0, capsys.readouterr().err
    assert len(_jsonl(tmp_path / "data/graphbench_medical/questions.jsonl")) == 8
    assert not (tmp_path / "data/graphbench_medical/corpus_raw.jsonl").exists()  # its source was not given


# ----------------------------------------------------------------------------- downloads
def _pinned(data: bytes, path: str = "dataset/x/questions.json") -> SourceFile:
    return SourceFile("atomicrag", path, git_blob_id(data), len(data), hashlib.sha256(data).hexdigest())


class _FakeResponse:
    def __init__(self, status: int, body: bytes, fail_after: int | None = None) -> None:
        self.status_code, self.body, self.fail_after = status, body, fail_after
        self.headers = {"content-length": str(len(body))}

    def iter_bytes(self, size: int):  # type: ignore[no-untyped-def]
        import httpx

        sent = 0
        while sent < len(self.body):
            if self.fail_after is not None and sent >= self.fail_after:
                raise httpx.ReadError("connection reset")
            yield self.body[sent:sent + 10]
            sent += 10


def test_download_resumes_after_an_interruption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"0123456789" * 50
    f = _pinned(data)
    calls: list[dict[str, str]] = []

    @contextlib.contextmanager
    def stream(method: str, url: str, headers: dict[str, str], **kw: Any):  # type: ignore[no-untyped-def]
        calls.append(dict(headers))
        assert url == f.url
        start = int(headers["Range"].split("=")[1].rstrip("-")) if "Range" in headers else 0
        yield _FakeResponse(206 if start else 200, data[start:], fail_after=200 if len(calls) == 1 else None)

    monkeypatch.setattr("httpx.stream", stream)
    dest = tmp_path / "q.json"
    with pytest.raises(SourceError, match="could not download .*raw.githubusercontent.com.*next run continues"):
        fetch.download(f, dest, progress=False)
    assert (tmp_path / "q.json.part").stat().st_size == 200 and not dest.exists()
    fetch.download(f, dest, progress=False)
    assert calls[1] == {"Range": "bytes=200-"}  # only the rest was asked for
    assert dest.read_bytes() == data and not (tmp_path / "q.json.part").exists()
    fetch.download(f, dest, progress=False)  # already there and verified: no request
    assert len(calls) == 2


def test_a_download_with_the_wrong_bytes_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _pinned(b"the pinned content")

    @contextlib.contextmanager
    def stream(method: str, url: str, headers: dict[str, str], **kw: Any):  # type: ignore[no-untyped-def]
        yield _FakeResponse(200, b"something else entirely")

    monkeypatch.setattr("httpx.stream", stream)
    with pytest.raises(SourceError, match="sha256 .*expected"):
        fetch.download(f, tmp_path / "q.json", progress=False)
    assert not (tmp_path / "q.json").exists() and not (tmp_path / "q.json.part").exists()


def test_offline_error_names_the_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    import httpx

    def stream(method: str, url: str, **kw: Any) -> Any:
        raise httpx.ConnectError("Name or service not known")

    monkeypatch.setattr("httpx.stream", stream)
    assert main(["data", "get", "musique", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"https://raw.githubusercontent.com/7HHHHH/AtomicRAG/{REPOS['atomicrag'].commit}/dataset/musique/Musique/questions.json" in err
    assert "--from" in err


def test_every_pinned_file_names_its_commit() -> None:
    for f in FILES:
        assert REPOS[f.repo].commit in f.url and len(f.git_blob) == 40
        assert (f.sha256 is None) == (f.size is None) and (f.sha256 is None or len(f.sha256) == 64)


def test_git_blob_id_is_gits() -> None:
    # `printf 'hello\n' | git hash-object --stdin`
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_data_list_prints_each_files_rows_and_hash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What a dataset size in the docs is read from: each file's non-empty rows and its sha256."""
    folder = tmp_path / "data" / "tiny"
    (folder / "smoke").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n\n{"id": "c"}\n')  # a blank line is no row
    (folder / "smoke" / "questions.jsonl").write_text('{"id": "q"}\n')
    (tmp_path / "data" / ".tiny.partial").mkdir()  # a build in progress is not a dataset
    assert main(["data", "list", "--data-dir", str(tmp_path / "data")]) == 0
    lines = capsys.readouterr().out.splitlines()
    digest = hashlib.sha256((folder / "corpus.jsonl").read_bytes()).hexdigest()
    assert lines[0] == str(tmp_path / "data") and len(lines) == 3
    assert lines[1].split() == ["tiny/corpus.jsonl", "3", "rows", "sha256", digest]
    assert lines[2].split()[:2] == ["tiny/smoke/questions.jsonl", "1"]
    assert main(["data", "list", "--data-dir", str(tmp_path / "none")]) != 0  # nothing found is an error
