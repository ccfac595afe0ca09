"""Empty questions are errors (library and CLI); ``atomicrag -q`` prints no bar or banner at all."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.library.cli import main
from tests.marks import MINILM, needs

from .conftest import DOCS, base_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rag() -> AtomicRAG:
    return AtomicRAG(base_config(), progress=False).index(DOCS[:6])


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_empty_or_whitespace_question_is_an_error(rag: AtomicRAG, question: str) -> None:
    # before: the empty query propagated from no seed and returned arbitrary atoms
    with pytest.raises(ValueError, match="empty"):
        rag.search(question)
    with pytest.raises(ValueError, match="empty"):
        rag.query(question)


def test_one_empty_question_in_a_batch_is_named(rag: AtomicRAG) -> None:
    with pytest.raises(ValueError, match="question 2 of 3 is empty"):
        rag.search(["Where was Marie Curie born?", " ", "Where is Warsaw?"])
    with pytest.raises(TypeError, match=r"question 1 of 1 is NoneType \(None\); expected a str"):
        rag.search([None])  # type: ignore[list-item]
    assert rag.search([]) == []
    assert rag.search("Where was Marie Curie born?").items  # a real question still answers


def test_cli_empty_question_exits_2(rag: AtomicRAG, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rag.save(tmp_path / "idx")
    assert main(["-q", "query", "  ", "--index", str(tmp_path / "idx"), "--no-answer"]) == 2
    err = capsys.readouterr().err
    assert "atomicrag: error:" in err and "empty" in err


def test_quiet_restores_the_environment(rag: AtomicRAG, tmp_path: Path) -> None:
    """-q switches library bars off for its command only (tests and embedders run it in-process)."""
    rag.save(tmp_path / "idx")
    before = {k: os.environ.get(k) for k in ("TQDM_DISABLE", "ATOMICRAG_NO_PROGRESS", "TRANSFORMERS_VERBOSITY")}
    assert main(["-q", "docs", "--index", str(tmp_path / "idx")]) == 0
    assert {k: os.environ.get(k) for k in before} == before


@pytest.mark.slow  # loads the real offline MiniLM (transformers draws its "Loading weights" bar)
@needs(MINILM)
def test_quiet_index_with_the_default_models_prints_nothing_on_stderr(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "marie.txt").write_text("Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891.")
    # as a user runs it: WANDB_MODE=offline (set for the tests) makes transformers print a line on import
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ATOMICRAG_", "TQDM_", "TRANSFORMERS_VERB", "WANDB_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    run = subprocess.run([sys.executable, "-m", "atomicrag.library.cli", "-q", "index", "docs", "--out", "idx"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""  # before: transformers' "Loading weights: 100%|...| 103/103" bar
    assert run.stdout.startswith("indexed 1 documents -> idx")
