"""The ``atomicrag`` command line: index a folder, query, stats, insert/delete, errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from atomicrag.cli import main, read_documents

from .conftest import DOCS, base_config


@pytest.fixture()
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "curie.txt").write_text(DOCS[0]["text"])
    (docs / "sub" / "warsaw.md").write_text(DOCS[2]["text"])
    (docs / "skip.bin").write_bytes(b"\x00\x01")
    lines = [json.dumps({"id": d["doc_id"], "text": d["text"], "lang": "en"}) for d in DOCS[3:8]]
    (docs / "more.jsonl").write_text("\n".join(lines) + "\n\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(base_config()))
    return docs, cfg


def test_read_documents(corpus: tuple[Path, Path]) -> None:
    docs = read_documents(corpus[0])
    assert [d.get("id") for d in docs] == ["curie.txt", "poland", "sorbonne", "nobel", "becquerel", "irene",
                                           "sub/warsaw.md"]  # sorted paths; .bin ignored
    assert docs[0]["title"] == "curie" and docs[1]["lang"] == "en"


def test_index_query_stats_insert_delete(corpus: tuple[Path, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    docs, cfg = corpus
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg),
                 "--set", "retriever.top_k=6"]) == 0
    assert "indexed 7 documents" in capsys.readouterr().out
    assert main(["-q", "query", "Where was Marie Curie born?", "--index", str(idx), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["query"] == "Where was Marie Curie born?" and 0 < len(res["items"]) <= 6
    assert main(["-q", "query", "Where was Marie Curie born?", "Who won the Nobel Prize?", "--index", str(idx),
                 "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("Q: ") == 2 and "  1. " in out and "  3. " not in out
    assert main(["-q", "stats", "--index", str(idx), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 7

    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({"doc_id": "vienna", "text": DOCS[12]["text"]}) + "\n")
    assert main(["-q", "insert", str(extra), "--index", str(idx)]) == 0
    assert main(["-q", "delete", "poland", "--index", str(idx)]) == 0
    capsys.readouterr()
    assert main(["-q", "stats", "--index", str(idx)]) == 0
    assert "documents: 7" in capsys.readouterr().out.replace("  ", "")

    # user errors: one line on stderr, exit status 2
    assert main(["-q", "delete", "nope", "--index", str(idx)]) == 2
    assert main(["-q", "index", str(docs), "--out", str(tmp_path / "x"), "--set", "retriever.topk=3"]) == 2
    assert main(["-q", "query", "q", "--index", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "unknown document id" in err and "topk" in err and "not an atomicrag index" in err


def test_console_entry_point_in_a_subprocess(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    docs, cfg = corpus
    idx = tmp_path / "idx"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = [sys.executable, "-m", "atomicrag.cli", "-q"]
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0  # in-process: faster
    out = subprocess.run([*run, "query", "Where was Marie Curie born?", "--index", str(idx), "--json"],
                         check=True, env=env, capture_output=True, text=True, timeout=300).stdout
    assert json.loads(out)["items"]
