"""The ``atomicrag`` command line: index a folder, query, stats, insert/delete, errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from atomicrag.library.cli import main

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


def test_index_reports_skipped_files_and_refuses_to_overwrite(corpus: tuple[Path, Path], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    docs, cfg = corpus
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0
    captured = capsys.readouterr()
    assert "indexed 7 documents" in captured.out
    assert "skipped 1 file(s): skip.bin (unsupported type .bin)" in captured.err  # never silently
    assert main(["-q", "docs", "--index", str(idx)]) == 0
    ids = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert ids == ["curie", "poland", "sorbonne", "nobel", "becquerel", "irene", "sub/warsaw"]  # no suffixes

    before = (idx / "manifest.json").read_text()
    assert main(["-q", "index", str(docs / "curie.txt"), "--out", str(idx), "--config", str(cfg)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err and (idx / "manifest.json").read_text() == before
    assert main(["-q", "index", str(docs / "curie.txt"), "--out", str(idx), "--config", str(cfg), "--force"]) == 0
    assert main(["-q", "docs", "--index", str(idx), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert [d["id"] for d in listed] == ["curie"] and listed[0]["meta"]["path"] == "curie.txt"
    # presets by name on the command line: the file's preset, then --set's preset and field
    assert main(["-q", "index", str(docs / "curie.txt"), "--out", str(idx), "--config", str(cfg), "--force",
                 "--set", "retriever=dense", "--set", "retriever.top_k=3"]) == 0
    saved = json.loads((idx / "manifest.json").read_text())["config"]
    assert (saved["retriever"]["name"], saved["retriever"]["top_k"], saved["embedder"]["name"]) == ("dense", 3, "fake")
    # --force never replaces a folder that is not an index
    assert main(["-q", "index", str(docs / "curie.txt"), "--out", str(docs), "--force"]) == 2
    assert "not an atomicrag index" in capsys.readouterr().err and (docs / "curie.txt").is_file()


def test_delete_docs_stats_export_load_no_model(corpus: tuple[Path, Path], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import networkx as nx

    from atomicrag.embed import factory

    docs, cfg = corpus
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0

    def no_model(*_: object, **__: object) -> None:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(factory, "_build", no_model)
    assert main(["-q", "stats", "--index", str(idx)]) == 0
    assert main(["-q", "docs", "--index", str(idx)]) == 0
    assert main(["-q", "delete", "sub/warsaw", "irene", "--index", str(idx)]) == 0
    assert main(["-q", "export", str(tmp_path / "g.graphml"), "--index", str(idx)]) == 0
    out = capsys.readouterr().out
    assert "deleted 2 documents" in out and "wrote " in out
    g = nx.read_graphml(tmp_path / "g.graphml")
    kinds = {d["kind"] for _, d in g.nodes(data=True)}
    assert kinds == {"atom", "entity"} and all(d["text"] for _, d in g.nodes(data=True))
    from collections import Counter

    from atomicrag import AtomicRAG

    graph = AtomicRAG.load(idx).graph  # still no model: the embedder loads on the first text to embed
    assert g.number_of_nodes() == graph.num_nodes
    assert Counter(d["type"] for _, _, d in g.edges(data=True)) == {
        t: len(e) for t, e in graph.edges.items() if len(e)}
    assert {d["doc_id"] for _, d in g.nodes(data=True) if d["kind"] == "atom"} == {
        "curie", "poland", "sorbonne", "nobel", "becquerel"}


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
    run = [sys.executable, "-m", "atomicrag.library.cli", "-q"]
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0  # in-process: faster
    out = subprocess.run([*run, "query", "Where was Marie Curie born?", "--index", str(idx), "--json"],
                         check=True, env=env, capture_output=True, text=True, timeout=300).stdout
    assert json.loads(out)["items"]
