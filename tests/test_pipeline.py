"""End to end: the whole pipeline on the 2Wiki smoke set, fake models first, then real ones."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from atomicrag.core.config import Config, register_configs, to_dataclass
from atomicrag.harness.pipeline import run_one, run_with_baselines
from atomicrag.harness.tracking import run_dir

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
register_configs()


def make_cfg(tmp_path: Path, *overrides: str) -> Config:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                f"paths.cache_dir={tmp_path / 'cache'}",
                f"paths.results_dir={tmp_path / 'results'}",
                f"paths.llm_cache={tmp_path / 'cache' / 'llm.sqlite'}",
                *overrides,
            ],
        )
    return to_dataclass(cfg)


def test_full_pipeline_with_fake_models_writes_a_complete_run(tmp_path, smoke_data) -> None:
    cfg = make_cfg(
        tmp_path, "llm=fake", "embedder=fake", "decompose=llm", "sieve=llm", "judge=run",
        "reader=precise", "dataset.limit=6", "llm.reader_documents=3",
    )
    rows = run_with_baselines(cfg)
    assert [label for label, _ in rows] == ["AtomicRAG[ppr]", "Vanilla RAG (dense passages)"]
    out = run_dir(cfg)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_questions"] == 6
    for key in ("recall@2", "recall@5", "em", "f1", "acc"):
        assert key in metrics["overall"], key
    assert metrics["graph_stats"]["atoms"] > 0
    modules = metrics["cost"]["modules"]
    for m in ("decompose", "sieve", "answer", "judge"):
        assert modules[m]["calls"] > 0, m  # every LLM module was accounted
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 6
    p = preds[0]
    assert p["candidates"] and len(p["candidates"][0]) == cfg.retriever.top_k
    assert p["candidates"][0][0]["score"] >= p["candidates"][0][-1]["score"]  # ranked best first
    assert p["sieve"] and "kept" in json.dumps(p["sieve"])  # sieve decisions are traced
    assert all(item["atom_ids"] for q in preds for item in q["context"])  # provenance kept
    assert p["answer"] and p["seeds"][0]["query"] == p["question"]
    # how many documents the reader read: the LLM option's setting, in every row and the run's metrics
    assert all(q["reader_documents"] == 3 for q in preds)
    assert metrics["stages"]["reader"]["reader_documents"] == 3
    assert (out / "config.yaml").read_text().count("retriever:") == 1
    # how the run was made: its full config, the data files it read (hashed), the models it used
    prov = metrics["provenance"]
    assert prov["config"]["dataset"]["limit"] == 6 and prov["config"]["sieve"]["name"] == "llm"
    assert any(Path(f).name == "questions.jsonl" for f in prov["data_files"])
    assert prov["models"]["llm"]["name"] == "fake" and prov["git"]["commit"]
    assert metrics["models"]["llm"] == cfg.llm.model  # the run used its LLM (read before the model closed)


def test_finished_run_is_reused_not_overwritten(tmp_path, smoke_data) -> None:
    cfg = make_cfg(tmp_path, "llm=fake", "embedder=fake", "reader=none", "dataset.limit=3")
    first = run_one(cfg)
    metrics_path = run_dir(cfg) / "metrics.json"
    stamp = metrics_path.stat().st_mtime_ns
    again = run_one(cfg)
    assert metrics_path.stat().st_mtime_ns == stamp
    assert again["overall"] == first["overall"]
    preds = [json.loads(line) for line in (run_dir(cfg) / "predictions.jsonl").read_text().splitlines()]
    # without a sieve the context is the merged top-k, each unit citing its atoms and passage
    assert all(p["context"] and p["context"][0]["atom_ids"] and p["context"][0]["passage_id"] for p in preds)


@pytest.mark.slow
def test_minilm_retrieval_finds_gold_passages(tmp_path, smoke_data) -> None:
    """Real offline embedder + spaCy: both retrievers find most gold passages of the smoke set."""
    cfg = make_cfg(tmp_path, "llm=fake", "embedder=minilm", "reader=none")
    (_, atomic), (_, vanilla) = run_with_baselines(cfg)
    dense = vanilla["overall"]["recall@5"]
    ppr = atomic["overall"]["recall@5"]
    assert dense > 50 and ppr > 40


@pytest.mark.slow
@pytest.mark.vllm
def test_quickstart_with_real_local_llm_answers_questions(tmp_path, smoke_data) -> None:
    """The README's run on two questions: real MiniLM, spaCy and SmolLM2 on the CPU vLLM server."""
    from atomicrag.llm.hf_models import ServerEnvError, find_server_python

    try:
        find_server_python()
    except ServerEnvError as exc:
        pytest.skip(f"vLLM server environment absent ({exc})")
    cfg = make_cfg(tmp_path, "llm=vllm_cpu", "llm.n_threads=1", "embedder=minilm", "dataset.limit=2")
    rows = run_with_baselines(cfg)
    for _, metrics in rows:
        # one call per question, and one more for each reply without "Answer:" (the follow-up)
        followups = metrics["stages"]["reader"]["answer_followups"]
        assert 0 <= followups <= 2
        assert metrics["cost"]["modules"]["answer"]["calls"] == 2 + followups
        assert metrics["cost"]["modules"]["answer"]["failures"] == 0
        assert metrics["cost"]["qa_tokens"] > 0
    preds = [json.loads(line) for line in (run_dir(cfg) / "predictions.jsonl").read_text().splitlines()]
    assert all(p["answer"].strip() for p in preds)  # the reader's text after "Answer:"
