"""A run whose LLM fails is loud: counted per module, not finished, non-zero exit; a re-run retries the failures."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_pipeline import make_cfg  # tests/ is on sys.path (rootdir conftest)

from atomicrag.harness.comparison import format_comparison
from atomicrag.harness.pipeline import run_with_baselines
from atomicrag.harness.tracking import is_finished, run_dir
from atomicrag.llm.fake import FakeLLM, prompt_text
from atomicrag.llm.protocol import ChatRequest


class FlakyServer:
    """The fake LLM behind a server that refuses requests whose prompt contains a marker."""

    def __init__(self) -> None:
        self.down_for: list[str] = []  # prompt substrings that fail; ["" ] = everything
        self.sent: Counter[str] = Counter()  # requests that reached the backend, by module

    def responder(self, request: ChatRequest, attempt: int) -> str:
        self.sent[request.module] += 1
        text = prompt_text(request)
        if any(m in text for m in self.down_for):
            raise ConnectionError("[Errno 111] connection refused")
        return FakeLLM.generate_text(request)


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> FlakyServer:
    srv = FlakyServer()
    monkeypatch.setattr("atomicrag.llm.factory.build_backend",
                        lambda cfg, paths: FakeLLM(cfg.model, responses=srv.responder, max_retries=1))
    return srv


def _questions(tmp_path: Path, n: int) -> list[str]:
    from atomicrag.data.loaders import load_dataset

    cfg = make_cfg(tmp_path, f"dataset.limit={n}")
    return [q.question for q in load_dataset(cfg.dataset, cfg.paths.resolved_data_dir(dataset=cfg.dataset)).questions]


def test_failed_reader_calls_fail_the_run_and_a_rerun_retries_exactly_them(tmp_path, smoke_data, server) -> None:
    qs = _questions(tmp_path, 4)
    cfg = make_cfg(tmp_path, "llm=fake", "llm.cache=true", "embedder=fake", "reader=precise", "dataset.limit=4",
                   "baselines=[]")
    server.down_for = [qs[0], qs[2]]
    rows = run_with_baselines(cfg)
    m = rows[0][1]
    assert not is_finished(run_dir(cfg)) and m["status"] == "failed"
    f = m["failures"]
    # each failed call's attempts got no reply (the server was down): counted, as a timeout would be
    assert f["by_module"]["answer"] == {"calls": 4, "failures": 2, "rate": 0.5, "errored_attempts": 4}
    assert f["failed_questions"] == 2 and m["error_rate"] == pytest.approx(0.5)
    assert "em" in m["overall"] and "f1" in m["overall"]  # failed answers score 0, the columns stay
    from atomicrag.engine.failures import RunFailed, format_failures, raise_if_failed

    assert "answer 2/4" in format_failures("row", m) and "FAILED" in format_failures("row", m)
    assert "attempts without a reply, retried: answer 4" in format_failures("row", m)
    assert "LLM err %" in format_comparison(rows) and "50.0" in format_comparison(rows)
    with pytest.raises(RunFailed, match="2 of 4 questions"):
        raise_if_failed(rows)

    server.down_for, server.sent = [], Counter()  # the server recovered
    m2 = run_with_baselines(cfg)[0][1]
    assert server.sent == {"answer": 2}  # exactly the failed items; the successes came from the cache
    assert m2["status"] == "finished" and m2["failures"]["failed_questions"] == 0
    assert is_finished(run_dir(cfg))

    server.sent = Counter()
    run_with_baselines(cfg)
    assert server.sent == {}  # a finished run is reused


def test_every_answer_failing_keeps_em_f1_and_exits_nonzero(tmp_path, smoke_data, server,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The Hydra entry point: the table is printed with the error rate, then the process exits 1."""
    from atomicrag.harness import run as run_mod

    server.down_for = ["Answer"]  # every reader prompt
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [
        "atomicrag.run", "llm=fake", "embedder=fake", "reader=precise", "dataset.limit=3", "baselines=[]",
        f"paths.cache_dir={tmp_path / 'cache'}", f"paths.results_dir={tmp_path / 'results'}",
        f"paths.llm_cache={tmp_path / 'cache' / 'llm.sqlite'}",
    ])
    with pytest.raises(SystemExit) as info:
        run_mod.main()
    assert info.value.code == 1
    out, err = capsys.readouterr()
    assert "answer 3/3" in out and "FAILED" in out and "re-run" in out, err[-3000:]
    assert "atomicrag: error:" in err and "Traceback" not in err
    metrics = json.loads(next((tmp_path / "results").glob("**/metrics.json")).read_text())
    assert metrics["status"] == "failed" and metrics["overall"]["em"] == 0.0 and metrics["error_rate"] == 1.0


def test_threshold_lets_a_few_failures_pass() -> None:
    from atomicrag.engine.failures import summarize_run

    modules = {"answer": {"calls": 100, "failures": 2}, "atomize": {"calls": 50, "failures": 9}}
    preds: list[dict[str, Any]] = [{"question_id": str(i), "errors": ["reader: x"] if i < 2 else []}
                                   for i in range(100)]
    assert summarize_run(0.0, modules, preds)["status"] == "failed"
    ok = summarize_run(0.05, modules, preds, {"chunks": 10, "failed_chunks": 0})
    assert ok["status"] == "finished" and ok["failures"]["by_module"]["atomize"]["failures"] == 9
    bad = summarize_run(0.05, modules, preds, {"chunks": 10, "failed_chunks": 1})
    assert bad["status"] == "failed" and "1 of 10 chunks" in bad["failures"]["exceeded"][0]


def test_truncated_answers_show_in_the_comparison_table() -> None:
    # a reply cut at max_tokens is a complete request (LLM err 0) but a failed question: the
    # quickstart table printed "LLM err % 0.0" beside two such answers per system
    from atomicrag.engine.failures import format_failures, summarize_run

    preds = [{"question_id": str(i), "errors": ["reader: reply truncated at max_tokens=512"] if i < 2 else []}
             for i in range(20)]
    m = {"n": 20, **summarize_run(0.2, {"answer": {"calls": 20, "failures": 0}}, preds)}
    assert m["status"] == "finished" and m["error_rate"] == 0.0
    table = format_comparison([("AtomicRAG", m)])
    header, _, row = [line for line in table.splitlines() if line.startswith("|")][:3]
    cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in row.split("|")]))
    assert cells["LLM err %"] == "0.0" and cells["failed q %"] == "10.0"
    bad = {"n": 20, **summarize_run(0.0, {"answer": {"calls": 20, "failures": 0}}, preds)}
    assert "cut at max_tokens" in format_failures("row", bad)  # the hint covers truncation too


def test_runs_written_before_the_status_field() -> None:
    from atomicrag.engine.failures import error_rate, run_is_finished

    legacy_ok = {"cost": {"modules": {"answer": {"calls": 3, "failures": 0}}}}
    legacy_bad = {"cost": {"modules": {"answer": {"calls": 3, "failures": 3}}}}
    assert run_is_finished(legacy_ok) and not run_is_finished(legacy_bad)
    assert error_rate(legacy_bad) == 1.0 and error_rate({"error_rate": 0.25}) == 0.25


def test_tables_carry_an_error_rate_column(tmp_path) -> None:
    from atomicrag.harness.report_tables import TABLES
    from atomicrag.harness.report_tables.runs import Run
    from atomicrag.harness.report_tables.table import build, with_error_column

    spec = with_error_column(TABLES["table2_smoke"]("f1"))
    col, fq = spec.columns[-2:]
    assert col.title == "LLM err. %" and col.published is False
    assert col.extract(Run(tmp_path, {"error_rate": 0.125})) == 12.5
    # a reply cut at max_tokens: no failed request, but a failed question
    cut = Run(tmp_path, {"error_rate": 0.0, "failures": {"questions": 20, "failed_questions": 3}})
    assert fq.title == "failed q. %" and col.extract(cut) == 0.0 and fq.extract(cut) == 15.0
    assert fq.extract(Run(tmp_path, {"error_rate": 0.0})) is None  # runs written before failures were counted
    assert build(spec, [], {}, {}).rows  # builds with the extra column
