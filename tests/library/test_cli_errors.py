"""Every ``atomicrag`` failure is one line on stderr and exit status 2 (Ctrl-C: 130), with the
traceback only under ``--debug``; OS faults (a full disk, a read-only folder) name the path and
leave the index as it was. The disk faults are real: a 200 KiB tmpfs and a read-only bind mount
in a private mount namespace (``unshare -rm``); the test is skipped where that is not allowed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from atomicrag.library.cli import main

from .conftest import DOCS, base_config, can_mount

ROOT = Path(__file__).resolve().parents[2]


def _errors(err: str) -> list[str]:
    """stderr without the fake embedder's warning (which any fake-model command prints)."""
    return [line for line in err.splitlines() if line.strip() and "hashing test embedder" not in line]


@pytest.fixture()
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": d["doc_id"], "text": d["text"]}) + "\n" for d in DOCS[:3]))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(base_config()))
    return docs, cfg


@pytest.fixture()
def index(tmp_path: Path, corpus: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> Path:
    docs, cfg = corpus
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0
    capsys.readouterr()
    return idx


def test_config_file_with_an_unknown_key_names_the_file_and_the_key(
        tmp_path: Path, corpus: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    docs, _ = corpus
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**base_config(), "retriever": {"top_kk": 3}}))
    assert main(["-q", "index", str(docs), "--out", str(tmp_path / "o"), "--config", str(bad)]) == 2
    lines = _errors(capsys.readouterr().err)
    assert len(lines) == 1, lines
    assert str(bad) in lines[0] and "retriever.top_kk" in lines[0]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_before_or_after_the_command_adds_the_traceback(
        tmp_path: Path, corpus: tuple[Path, Path], capsys: pytest.CaptureFixture[str], where: str) -> None:
    docs, _ = corpus
    bad = tmp_path / "bad.yaml"
    bad.write_text("retriever: {top_kk: 3}\n")
    cmd = ["index", str(docs), "--out", str(tmp_path / "o"), "--config", str(bad)]
    argv = ["--debug", *cmd] if where == "before" else [*cmd, "--debug"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("atomicrag: error: ")
    assert main(cmd) == 2  # and without it, none
    assert "Traceback" not in capsys.readouterr().err


def test_a_damaged_index_is_one_line(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (index / "documents.jsonl").write_bytes(b"\x00garbage{")
    assert main(["-q", "stats", "--index", str(index)]) == 2
    lines = _errors(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("atomicrag: error: ") and str(index) in lines[0], lines


def test_ctrl_c_is_one_line_and_exit_130(index: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("atomicrag.library.api.AtomicRAG.load", interrupted)
    assert main(["-q", "docs", "--index", str(index)]) == 130
    assert _errors(capsys.readouterr().err) == ["atomicrag: interrupted"]


def test_a_program_fault_is_one_line_that_points_at_debug(index: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*a: object, **k: object) -> None:
        raise TypeError("unsupported operand")

    monkeypatch.setattr("atomicrag.library.api.AtomicRAG.load", broken)
    assert main(["-q", "docs", "--index", str(index)]) == 2
    lines = _errors(capsys.readouterr().err)
    assert len(lines) == 1 and "TypeError: unsupported operand" in lines[0] and "--debug" in lines[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file modes (the read-only bind mount test covers it)")
def test_insert_into_a_folder_without_write_permission(tmp_path: Path, index: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "ulm", "text": "Ulm is a city on the Danube River."}) + "\n")
    before = (index / "manifest.json").read_text()
    tmp_path.chmod(0o555)
    try:
        assert main(["-q", "insert", str(new), "--index", str(index)]) == 2
    finally:
        tmp_path.chmod(0o755)
    lines = _errors(capsys.readouterr().err)
    assert len(lines) == 1 and "permission denied" in lines[0] and str(index) in lines[0], lines
    assert (index / "manifest.json").read_text() == before


_FAULTS = textwrap.dedent("""
    import json, subprocess, sys
    from atomicrag.library.cli import main
    full, ro, idx, new = sys.argv[1:5]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", full], check=True)
    subprocess.run(["cp", "-r", idx, full + "/idx"], check=True)
    subprocess.run(["dd", "if=/dev/zero", "of=" + full + "/fill", "bs=1k", "count=1000"],
                   capture_output=True)  # fails when the disk is full: that is the point
    subprocess.run(["cp", "-r", idx, ro + "/idx"], check=True)
    subprocess.run(["mount", "--bind", ro, ro], check=True)
    subprocess.run(["mount", "-o", "remount,ro,bind", ro], check=True)
    codes = {}
    for name, target in (("full", full + "/idx"), ("ro", ro + "/idx")):
        print("@@" + name, file=sys.stderr, flush=True)
        codes[name] = main(["-q", "insert", new, "--index", target])
        sys.stderr.flush()
        codes[name + "_manifest"] = open(target + "/manifest.json").read()
    print(json.dumps(codes))
""")


@pytest.mark.skipif(not can_mount(), reason="no private mount namespace here (unshare -rm + mount)")
def test_full_disk_and_read_only_folder_are_one_line_and_leave_the_index(tmp_path: Path, index: Path) -> None:
    full, ro = tmp_path / "full", tmp_path / "ro"
    full.mkdir()
    ro.mkdir()
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "ulm", "text": "Ulm is a city on the Danube River in Germany. " * 200}) + "\n")
    before = (index / "manifest.json").read_text()
    proc = subprocess.run(["unshare", "-rm", sys.executable, "-c", _FAULTS, str(full), str(ro), str(index), str(new)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    err = {part.split("\n", 1)[0]: _errors(part.split("\n", 1)[1]) for part in proc.stderr.split("@@")[1:]}
    assert codes["full"] == 2 and codes["ro"] == 2
    assert codes["full_manifest"] == before and codes["ro_manifest"] == before  # nothing half-written
    for name, what in (("full", "no space left"), ("ro", "read-only")):
        lines = err[name]
        assert len(lines) == 1, lines  # one line, no traceback
        assert lines[0].startswith("atomicrag: error: could not write the index ") and what in lines[0]
        assert f"{tmp_path / name}" in lines[0]  # names the index (and the file that failed)


def test_a_damaged_llm_cache_is_moved_aside_and_the_query_answers(tmp_path: Path, index: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "llm.sqlite"
    cache.write_bytes(b"half-written " * 100)
    # the LLM is the user's choice (a saved index names none): the fake one, offline
    code = main(["-q", "query", "Where was Marie Curie born?", "--index", str(index), "--set", "reader.name=precise",
                 "--set", "llm=fake", "--set", "llm.cache=true", "--set", f"paths.llm_cache={cache}"])
    out, err = capsys.readouterr()
    assert code == 0 and "A: " in out
    (moved,) = tmp_path.glob("llm.sqlite.damaged-*")
    warning = [line for line in err.splitlines() if "LLM cache" in line]
    assert len(warning) == 1 and str(cache) in warning[0] and "paths.llm_cache" in warning[0] \
        and str(moved) in warning[0]
    assert "Traceback" not in err and "DatabaseError" not in err


def test_insert_into_a_missing_index_is_one_line_and_leaves_no_lock(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "a.txt"
    doc.write_text("Marie Curie was born in Warsaw.")
    assert main(["insert", str(doc), "--index", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no such index folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]  # no .nope.lock left beside it


def test_harness_run_on_an_unwritable_results_folder_is_one_line(tmp_path: Path) -> None:
    """``python -m atomicrag.run`` too: an OS error is one line naming the path, exit 2."""
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the results folder should be")
    env = {**os.environ, "ATOMICRAG_NO_PROGRESS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "atomicrag.run", "llm=fake", "embedder=fake", "reader=none",
                           "baselines=[]", "dataset.limit=2", f"paths.results_dir={blocker}",
                           f"paths.cache_dir={tmp_path / 'cache'}", f"paths.llm_cache={tmp_path / 'llm.sqlite'}"],
                          cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [x for x in proc.stderr.splitlines() if x.startswith("atomicrag: error:")]
    assert len(lines) == 1 and str(blocker) in lines[0] and "Traceback" not in proc.stderr
