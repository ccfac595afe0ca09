"""Progress counts real work: encoder batches and LLM requests as they finish; quiet logs."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from atomicrag.core import progress
from atomicrag.core.progress import reporting, task

Seen = list[tuple[str, int, int]]


def _recorder() -> tuple[Seen, progress.Sink]:
    seen: Seen = []
    return seen, lambda s, d, t: seen.append((s, d, t))


def test_tasks_count_advances_of_their_unit_and_complete_at_exit() -> None:
    seen, sink = _recorder()
    with reporting(sink):
        with task("embed_atoms", 10, unit="text") as t:
            progress.advance("text", 4)
            progress.advance("request", 3)  # another unit: not this task's work
            with task("answer", 2, unit="request"):
                progress.advance("request")
                progress.advance("text", 2)  # the outer text task moves, not the request task
            t.settle(5)  # a caller that knows 5 are done; counts nothing twice
        with pytest.raises(RuntimeError), task("sieve", 3, unit="request"):
            raise RuntimeError  # a failed batch is not reported as complete
    assert seen == [("embed_atoms", 0, 10), ("embed_atoms", 4, 10), ("answer", 0, 2), ("answer", 1, 2),
                    ("embed_atoms", 6, 10), ("answer", 2, 2), ("embed_atoms", 10, 10), ("sieve", 0, 3)]
    with reporting(None), task("x", 3, unit="text"):
        progress.advance("text")  # silence: nothing to report to, nothing fails


def test_real_encoder_reports_every_batch() -> None:
    from atomicrag.core.config import EmbedderConfig
    from atomicrag.embed.factory import build_embedder
    from atomicrag.graph.build import encode

    emb = build_embedder(EmbedderConfig(name="sentence_transformers", model="minilm", batch_size=8))
    texts = [f"Sentence number {i} about the river {'Danube ' * (i % 5)}." for i in range(30)]
    seen, sink = _recorder()
    with reporting(sink):
        vecs = encode(emb, texts, "atom")
    assert vecs.shape == (30, emb.dim)
    # one report per encoder batch of at most 8 texts (in bf16 a batch holds one token length,
    # so there may be more, smaller batches than 30 / 8)
    done = [d for _, d, _ in seen]
    steps = [b - a for a, b in zip(done, done[1:])]
    assert done[0] == 0 and done[-1] == 30 and len(steps) >= 4 and all(0 < s <= 8 for s in steps)
    assert {s for s, _, _ in seen} == {"embed_atoms"}


def test_library_answer_batch_moves_per_question() -> None:
    from library.conftest import DOCS, QUESTIONS, base_config

    from atomicrag import AtomicRAG

    seen, sink = _recorder()
    rag = AtomicRAG(base_config(reader={"name": "precise"}), progress=sink).index(DOCS[:8])
    rag.query(QUESTIONS)
    answer = [(d, t) for s, d, t in seen if s == "answer"]
    assert answer == [(i, len(QUESTIONS)) for i in range(len(QUESTIONS) + 1)]
    seen.clear()
    rag.query(QUESTIONS)  # cached in the LLM layer or not, the bar still completes
    assert ("answer", len(QUESTIONS), len(QUESTIONS)) in seen


def test_harness_shows_one_bar_per_question_batch(tmp_path: Path, smoke_data: Path) -> None:
    from test_pipeline import make_cfg

    from atomicrag.harness.pipeline import run_one

    cfg = make_cfg(tmp_path, "llm=fake", "embedder=fake", "sieve=llm", "reader=precise", "dataset.limit=5")
    seen, sink = _recorder()
    with reporting(sink):
        run_one(cfg)
    for stage in ("sieve", "answer"):
        assert [d for s, d, _ in seen if s == stage] == [0, 1, 2, 3, 4, 5], stage
    assert ("embed_atoms", 0, seen[[s for s, _, _ in seen].index("embed_atoms")][2]) in seen


def test_a_fresh_process_prints_no_torch_sparse_warning(tmp_path: Path) -> None:
    """torch warns once per process, so only a fresh process shows whether it is filtered."""
    import os
    import subprocess
    import sys

    from library.conftest import DOCS, base_config

    from atomicrag import AtomicRAG

    AtomicRAG(base_config(), progress=False).index(DOCS[:6]).save(tmp_path / "idx")
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-W", "default", "-m", "atomicrag.library.cli", "-q", "query", "Where is Warsaw?",
                          "--index", str(tmp_path / "idx"), "--no-answer"], check=False, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(root)})
    assert run.returncode == 0, run.stderr
    assert "Warsaw" in run.stdout and "sparse" not in run.stderr.lower(), run.stderr


def test_http_requests_are_not_logged_at_info() -> None:
    import atomicrag.llm.openai_client  # noqa: F401

    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)


def test_a_nested_task_of_the_same_unit_is_part_of_the_outer_bar() -> None:
    """A caching embedder embeds its misses inside "embed the atoms": one bar, moved by the misses
    and topped up by the caller, never a second bar (or the outer bar reset to the part's size)."""
    seen, sink = _recorder()
    with reporting(sink), task("embed_atoms", 10, unit="text") as outer:
        with task("embed_atoms", 4, unit="text"):  # the 4 texts the cache did not hold
            progress.advance("text", 3)
        outer.settle(10)  # the caller knows the other 6 came from the cache
    assert seen == [("embed_atoms", 0, 10), ("embed_atoms", 3, 10), ("embed_atoms", 4, 10), ("embed_atoms", 10, 10)]


def test_loading_a_model_draws_no_bar_of_the_library_underneath(capfd: pytest.CaptureFixture[str]) -> None:
    """transformers' "Loading weights" bar is not one of our stages: building the embedder is quiet,
    and the library's own switch is restored after."""
    from transformers.utils import logging as hf_logging

    from atomicrag.core.config import EmbedderConfig
    from atomicrag.embed.factory import build_embedder

    assert hf_logging.is_progress_bar_enabled()
    build_embedder(EmbedderConfig(name="sentence_transformers", model="minilm"))
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()
