"""Resume, not redo: a harness run killed after some answers reuses them on the rerun (the run
folder's answer checkpoint), says how many (log line and metrics.json ``resumed_answers``), asks
only the rest, retries the failed ones, and ends with the results of an uninterrupted run."""
from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from atomicrag.answer.readers import LLMReader
from atomicrag.core.config import Config, register_configs, to_dataclass
from atomicrag.engine import answer_checkpoint
from atomicrag.harness.pipeline import run_one
from atomicrag.harness.tracking import is_finished, run_dir

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
register_configs()
N = 6  # questions


def make_cfg(root: Path) -> Config:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[
            f"paths.cache_dir={root / 'cache'}", f"paths.results_dir={root / 'results'}",
            f"paths.llm_cache={root / 'cache' / 'llm.sqlite'}",
            # no LLM cache: what the rerun does not ask again comes from the checkpoint alone
            "llm=fake", "llm.cache=false", "embedder=fake", "reader=precise", f"dataset.limit={N}",
        ])
    return to_dataclass(cfg)


class Asked:
    """Counts the questions the reader is asked; ``kill_at``: the call that is Ctrl-C'd;
    ``fail``: questions whose answer comes back failed (as a refused LLM call would)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, kill_at: int | None = None, fail: set[str] = frozenset()):
        self.questions: list[str] = []
        self.calls = 0
        original = LLMReader.answer

        def answer(reader: LLMReader, questions: list[str], contexts: Any) -> list[Any]:
            self.calls += 1
            if self.calls == kill_at:
                raise KeyboardInterrupt
            self.questions += questions
            outputs = original(reader, questions, contexts)
            return [dataclasses.replace(o, failed=True, error="connection refused", answer="")
                    if q in fail else o for q, o in zip(questions, outputs)]

        monkeypatch.setattr(LLMReader, "answer", answer)


def _answers(out: Path) -> dict[str, str]:
    return {p["question"]: p["answer"] for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}


def test_a_killed_run_resumes_from_its_answers(tmp_path: Path, smoke_data: Path, monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(answer_checkpoint, "CHUNK", 2)  # answers are checkpointed two at a time
    ref_cfg = make_cfg(tmp_path / "ref")
    whole = Asked(monkeypatch)
    reference = run_one(ref_cfg)
    assert len(whole.questions) == N and reference["resumed_answers"] == 0
    ref_answers = _answers(run_dir(ref_cfg))
    monkeypatch.undo()
    monkeypatch.setattr(answer_checkpoint, "CHUNK", 2)

    cfg = make_cfg(tmp_path / "run")
    out = run_dir(cfg)
    first_chunk = list(ref_answers)[:2]
    killed = Asked(monkeypatch, kill_at=3, fail={first_chunk[0]})  # killed after two chunks, one answer failed
    with pytest.raises(KeyboardInterrupt):
        run_one(cfg)
    assert not is_finished(out)
    lines = (out / answer_checkpoint.CHECKPOINT_NAME).read_text().splitlines()
    assert len(lines) == 3  # four answered, the failed one not kept
    monkeypatch.undo()
    monkeypatch.setattr(answer_checkpoint, "CHUNK", 2)

    rerun = Asked(monkeypatch)
    with caplog.at_level(logging.INFO, logger="atomicrag"):
        metrics = run_one(cfg)
    assert sorted(rerun.questions) == sorted(q for q in ref_answers if q not in killed.questions[1:4])
    assert first_chunk[0] in rerun.questions  # the failed answer is asked again, never reused
    assert metrics["resumed_answers"] == 3
    assert "reused 3 of 6 answers" in caplog.text
    assert _answers(out) == ref_answers  # the same results as the run that was never killed
    assert metrics["overall"] == reference["overall"]
    assert not (out / answer_checkpoint.CHECKPOINT_NAME).exists()  # finished: the checkpoint is gone


def test_the_checkpoint_keeps_only_good_answers_under_the_exact_request(tmp_path: Path) -> None:
    from atomicrag.answer.readers import ReaderOutput
    from atomicrag.llm.protocol import ChatRequest

    path = tmp_path / "a.jsonl"
    cp = answer_checkpoint.AnswerCheckpoint(path, scope={"llm": "m"})
    req = ChatRequest(messages=[{"role": "user", "content": "Q?"}])
    good, failed = cp.key("q1", req), cp.key("q2", req)
    cut = cp.key("q3", req)
    cp.add([(good, "q1", ReaderOutput(answer="Paris", raw="Answer: Paris", prompt_tokens=9)),
            (failed, "q2", ReaderOutput(answer="", raw="", failed=True, error="refused")),
            (cut, "q3", ReaderOutput(answer="", raw="...", truncated=True))])
    with open(path, "a") as f:
        f.write('{"chunk_id": "torn')  # killed mid-line
    again = answer_checkpoint.AnswerCheckpoint(path, scope={"llm": "m"})
    assert again.get(good)["answer"] == "Paris"
    assert again.get(failed) is None and again.get(cut) is None  # retried, never reused
    other = ChatRequest(messages=[{"role": "user", "content": "Q?"}], max_tokens=7)
    assert again.key("q1", other) != good  # another request: answered afresh
    assert answer_checkpoint.AnswerCheckpoint(path, scope={"llm": "other"}).key("q1", req) != good  # another model
