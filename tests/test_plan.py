"""The run plan (plan=true): its token estimates match what committed runs measured, it covers every
published row quickly without loading a model, prices come from config, and a real run records it."""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
import yaml

from atomicrag.core.config import to_dataclass
from atomicrag.harness.config import load_harness_config
from atomicrag.harness.plan import RunPlan, StagePlan, actual_vs_plan, plan_run, prices

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf" / "experiment"
MODULE = {"decompose": "decompose", "sieve": "sieve", "reader": "answer", "query_ner": "retrieve_ner"}
# committed smoke runs with measured prompt tokens per module (vLLM's own token counts)
SMOKE_RUNS = sorted(p.parent for p in ROOT.glob("results/table2_smoke*/*/smoke/*/metrics.json"))


def _recorded_config(run: Path) -> list[str]:
    """Overrides that make today's code plan what the run ran: a run recorded before the
    document reader context (no reader.context in its config) read the atom list."""
    recorded = yaml.safe_load((run / "config.yaml").read_text())
    return [] if "context" in recorded.get("reader", {}) else ["reader.context=atoms"]


@pytest.mark.parametrize("run", SMOKE_RUNS, ids=lambda p: p.name[:60])
def test_input_tokens_per_call_are_within_20_percent_of_the_measured(run: Path, smoke_data: Path) -> None:
    """Per stage, estimated prompt tokens of one call against the run's measured prompt tokens per
    attempt. The retrieval outcome (candidates per sieve prompt, atoms kept) is taken from the run:
    what is checked is the token estimate of the prompts the stages send. A stage with failed calls
    is not compared: a call that failed reports no tokens, so its per-attempt figure is too low."""
    cfg = load_harness_config(str(run / "config.yaml"),
                              overrides=[*_recorded_config(run), f"paths.data_dir={smoke_data}"])
    metrics = json.loads((run / "metrics.json").read_text())
    sieve = metrics["stages"].get("sieve") or {}
    n = metrics["n_questions"]
    plan = plan_run(cfg, sieve_candidates=sieve["candidates"] / sieve["prompts"] if sieve else None,
                    sieve_kept=sieve["kept"] / n if sieve else None)
    modules = metrics["cost"]["modules"]
    compared = 0
    followups = (metrics["stages"].get("reader") or {}).get("answer_followups", 0)
    for stage in plan.stages:
        measured = modules[MODULE[stage.stage]]
        extra = followups if stage.stage == "reader" else 0  # a reply without `Answer:` is continued
        assert stage.calls + extra == measured["calls"], stage.stage  # one call per question, as the run made
        if measured["failures"] or not measured["attempts"] or extra:
            continue  # a follow-up re-sends the prompt with the reply: its tokens are not one call's
        # attempts that got no reply (a timeout) report no tokens: divide by the replies only
        per_attempt = measured["prompt_tokens"] / (measured["attempts"] - measured.get("errored_attempts", 0))
        assert abs(stage.input_per_call / per_attempt - 1) <= 0.20, (stage.stage, stage.input_per_call, per_attempt)
        compared += 1
    if not compared and followups:
        pytest.skip("every stage with tokens to compare answered with follow-ups (its call count was checked)")
    assert compared >= 1


def test_the_smoke_runs_are_there() -> None:
    assert len(SMOKE_RUNS) >= 5  # the check above compares something


def _rows() -> list[str]:
    return sorted(str(p.relative_to(CONF).with_suffix("")) for t in ("table1", "table2")
                  for p in (CONF / t).glob("*.yaml"))


@pytest.mark.parametrize("name", _rows())
def test_every_published_row_has_a_plan_in_under_10_s(name: str, smoke_data: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Table 1 and Table 2 rows, as composed (real models named; nothing is loaded), on the shipped
    smoke sets (a row whose dataset has none is planned on 2wiki's), with the released prompts the
    rows send (the released sieve is read from a real checkout)."""
    from tests.prompts.released_checkout import require_checkout

    released_tree = require_checkout()
    import atomicrag.embed.factory as embed_factory
    import atomicrag.llm.factory as llm_factory
    from atomicrag.harness.experiments import compose_experiment

    def no_model(*_a, **_k):
        raise AssertionError("the plan loaded a model")

    monkeypatch.setattr(llm_factory, "build_backend", no_model)
    monkeypatch.setattr(embed_factory, "build_embedder", no_model)
    # the smoke sets hold their passage corpus only: a row that indexes another corpus file (the
    # authors' chunks, table1/2wiki_atomicrag) is planned on the smoke passages
    over = [f"paths.data_dir={smoke_data}", "dataset.split=smoke", "dataset.corpus_file=null",
            f"fidelity.released_code={released_tree}"]
    dcfg = compose_experiment(name, over)
    if not (smoke_data / dcfg.dataset.name / "smoke").is_dir():
        dcfg = compose_experiment(name, [*over, "dataset=2wiki_smoke"])
    cfg = to_dataclass(dcfg)
    t0 = time.perf_counter()
    plan = plan_run(cfg)
    assert time.perf_counter() - t0 < 10
    assert plan.n_questions > 0 and plan.calls > 0
    stages = {s.stage for s in plan.stages}
    assert ("reader" in stages) == (cfg.reader.name != "none")
    assert ("sieve" in stages) == (cfg.sieve.name == "llm")
    assert ("decompose" in stages) == (cfg.decompose.name == "llm")
    assert ("extraction" in stages) == (cfg.atomizer.name == "llm")
    assert all(s.input_tokens > 0 and s.max_output_tokens >= s.output_tokens for s in plan.stages)
    assert "ppr_blocks" in plan.gpu_bytes and plan.gpu_bytes["embedder_weights"] > 0
    text = plan.format()
    assert "estimated cost: $" in text and "GPU memory" in text
    if cfg.llm.model == "gpt-4o-mini":
        assert plan.cost_usd() > 0


def test_prices_come_from_the_table_the_config_or_are_free_for_a_local_server() -> None:
    cfg = load_harness_config(overrides=["llm=fake"])
    assert prices(cfg) == (0.0, 0.0)
    cfg.llm.name, cfg.llm.model = "openai", "gpt-4o-mini"
    assert prices(cfg) == (0.15, 0.60)
    cfg.llm.price_per_mtok_in, cfg.llm.price_per_mtok_out = 1.0, 2.0
    assert prices(cfg) == (1.0, 2.0)
    cfg.llm.price_per_mtok_in = cfg.llm.price_per_mtok_out = -1.0
    cfg.llm.model = "some-hosted-model"
    with pytest.raises(ValueError, match="llm.price_per_mtok_in"):
        prices(cfg)


def test_cost_counts_only_the_calls_the_cache_does_not_answer() -> None:
    plan = RunPlan("r", "d", "s", 1, 10, "openai:gpt-4o-mini", 1.0, 2.0,
                   stages=[StagePlan("reader", 10, 1_000_000, 500_000, cached_calls=5, max_output_tokens=1_000_000)])
    assert plan.cost_usd() == pytest.approx(0.5 * (1.0 + 1.0))
    assert plan.cost_usd(worst=True) == pytest.approx(0.5 * (1.0 + 2.0))


def test_cached_calls_are_found_in_the_llm_cache(tmp_path: Path, smoke_data: Path) -> None:
    """A decomposition already in the cache file is counted as a free call."""
    from atomicrag.data.loaders import load_dataset
    from atomicrag.llm.cache import cache_key
    from atomicrag.llm.protocol import ChatRequest
    from atomicrag.prompts import decompose as decompose_prompt

    db = tmp_path / "llm.sqlite"
    cfg = load_harness_config(overrides=["llm=fake", "llm.cache=true", "decompose=llm", f"paths.llm_cache={db}",
                                         f"paths.data_dir={smoke_data}", "reader=none"])
    q = load_dataset(cfg.dataset, cfg.paths.resolved_data_dir(dataset=cfg.dataset)).questions[0].question
    budget = cfg.decompose.max_tokens or cfg.llm.max_tokens
    req = ChatRequest(decompose_prompt.build_messages(q, max_sub_questions=cfg.decompose.max_sub_questions,
                                                      threshold=cfg.decompose.complexity_threshold,
                                                      trigger=cfg.decompose.decompose_trigger),
                      decompose_prompt.SCHEMA, max_tokens=budget, seed=cfg.llm.seed)
    conn = sqlite3.connect(db)
    from atomicrag.llm.cache import _SCHEMA_SQL  # the cache's own table

    conn.executescript(_SCHEMA_SQL)
    conn.execute("INSERT INTO llm_cache VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (cache_key(f"{cfg.llm.name}:{cfg.llm.model}:{cfg.llm.model_path or ''}", req),
                  cfg.llm.model, "{}", "{}", 10, 5, 0.0))
    conn.commit()
    conn.close()
    decompose = next(s for s in plan_run(cfg).stages if s.stage == "decompose")
    assert decompose.cached_calls == 1 and decompose.calls > 1


def test_estimated_and_actual_are_side_by_side() -> None:
    plan = {"stages": [{"stage": "reader", "calls": 3, "input_tokens": 300, "output_tokens": 30}]}
    got = actual_vs_plan(plan, {"answer": {"calls": 3, "attempts": 3, "prompt_tokens": 280, "completion_tokens": 20}})
    assert got["reader"]["estimated_input_tokens"] == 300 and got["reader"]["actual_input_tokens"] == 280


def test_the_plan_command_writes_a_record_that_names_its_command(tmp_path: Path, smoke_data: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from atomicrag.harness.plan import main

    out = tmp_path / "plans" / "full.json"
    assert main([str(out), "table2_smoke/full", f"paths.data_dir={smoke_data}", f"paths.llm_cache={tmp_path}/c.sqlite"]) == 0
    record = json.loads(out.read_text())
    assert record["command"].startswith(f"python -m atomicrag.harness.plan {out} table2_smoke/full")
    assert {s["stage"] for s in record["stages"]} == {"decompose", "sieve", "reader"}
    assert record["n_questions"] == 20 and "total" in capsys.readouterr().out
    assert main([str(out)]) == 2  # no experiment: the usage, not a traceback


def test_a_real_run_records_its_plan_next_to_the_measured(tmp_path: Path, smoke_data: Path) -> None:
    from atomicrag.harness.pipeline import run_one

    cfg = load_harness_config(overrides=[
        "llm=fake", "embedder=fake", "dataset.limit=2", "sieve=llm", f"paths.data_dir={smoke_data}",
        f"paths.cache_dir={tmp_path / 'cache'}", f"paths.results_dir={tmp_path / 'runs'}",
        f"paths.llm_cache={tmp_path / 'llm.sqlite'}"])
    metrics = run_one(cfg)
    side = metrics["plan"]["vs_actual"]
    assert side["sieve"]["estimated_calls"] == side["sieve"]["actual_calls"] == 2
    assert side["reader"]["actual_input_tokens"] is not None and side["reader"]["estimated_input_tokens"] > 0
    assert metrics["plan"]["estimate"]["n_questions"] == 2
