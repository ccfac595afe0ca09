"""CLI exit codes when the LLM fails: a failed reader and an index whose every chunk failed are errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from atomicrag.library.cli import main
from atomicrag.llm.fake import FakeLLM

from .conftest import DOCS, base_config


def _down(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(request, attempt):
        raise ConnectionError("[Errno 111] connection refused")

    monkeypatch.setattr("atomicrag.llm.factory.build_backend",
                        lambda cfg, paths: FakeLLM(cfg.model, responses=refuse, max_retries=0))


def _corpus(tmp_path: Path, **cfg_overrides: dict) -> tuple[Path, Path]:
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": d["doc_id"], "text": d["text"]}) + "\n" for d in DOCS[:4]))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(base_config(**cfg_overrides)))
    return docs, cfg


def test_query_with_a_failed_reader_prints_the_error_and_exits_nonzero(tmp_path: Path, monkeypatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    docs, cfg = _corpus(tmp_path)
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0
    capsys.readouterr()
    _down(monkeypatch)
    code = main(["-q", "query", "Where was Marie Curie born?", "--index", str(idx), "--set", "reader.name=precise"])
    out, err = capsys.readouterr()
    assert code != 0
    assert "connection refused" in err and "reader" in err
    assert "A: (none" in out  # never a bare "A: "
    code = main(["-q", "query", "Where was Marie Curie born?", "--index", str(idx), "--set", "reader.name=precise",
                 "--json"])
    assert code != 0 and "connection refused" in json.loads(capsys.readouterr().out)["errors"][0]


def test_index_where_every_chunk_failed_exits_nonzero_and_saves_nothing(tmp_path: Path, monkeypatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    docs, cfg = _corpus(tmp_path, atomizer={"name": "llm", "max_chunk_failures_frac": 1.0})
    _down(monkeypatch)
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) != 0
    err = capsys.readouterr().err
    assert "all 4 chunks failed" in err and "connection refused" in err
    assert not idx.exists()


def test_index_with_the_default_failure_budget_aborts(tmp_path: Path, monkeypatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    docs, cfg = _corpus(tmp_path, atomizer={"name": "llm"})
    _down(monkeypatch)
    assert main(["-q", "index", str(docs), "--out", str(tmp_path / "idx"), "--config", str(cfg)]) != 0
    assert "max_chunk_failures_frac" in capsys.readouterr().err


def test_insert_where_every_new_chunk_failed_exits_nonzero_and_keeps_the_index(
        tmp_path: Path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    docs, cfg = _corpus(tmp_path, atomizer={"name": "llm", "max_chunk_failures_frac": 1.0})
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0
    manifest = (idx / "manifest.json").read_text()
    capsys.readouterr()
    _down(monkeypatch)
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "extra", "text": "Ada Lovelace wrote the first program in 1843."}) + "\n")
    assert main(["-q", "insert", str(new), "--index", str(idx)]) != 0
    err = capsys.readouterr().err
    assert "all 1 chunks failed" in err and "was not changed" in err
    assert (idx / "manifest.json").read_text() == manifest  # nothing saved: the old index stands


def test_insert_prints_the_documents_whose_chunks_failed_from_the_report(
        tmp_path: Path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    # one new document fails (its requests are refused), the other is atomized: the index is saved
    # and the failed document is named with its reason, read from AtomicRAG.report()
    docs, cfg = _corpus(tmp_path, atomizer={"name": "llm", "max_chunk_failures_frac": 1.0})
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0
    capsys.readouterr()

    def refuse_lovelace(request, attempt):
        if "Lovelace" in str(request.messages):
            raise ConnectionError("[Errno 111] connection refused")
        return FakeLLM.generate_text(request)

    monkeypatch.setattr("atomicrag.llm.factory.build_backend",
                        lambda cfg, paths: FakeLLM(cfg.model, responses=refuse_lovelace, max_retries=0))
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "ada", "text": "Ada Lovelace wrote the first program in 1843."}) + "\n"
                   + json.dumps({"id": "rome", "text": "Rome is the capital of Italy."}) + "\n")
    assert main(["-q", "insert", str(new), "--index", str(idx)]) == 0
    err = capsys.readouterr().err
    assert "atomicrag: ada: 1 of 1 chunks failed" in err and "connection refused" in err
    assert "rome:" not in err
    from atomicrag import AtomicRAG

    [ada] = AtomicRAG.load(idx, progress=False).failures  # saved with the index
    assert ada.doc_id == "ada" and ada.failed_chunks == 1 and "connection refused" in ada.reasons[0]

