"""Every offline-runnable experiment file runs end to end for one question with fake models.

The paper's configurations name GPU models (bge-large, gpt-4o-mini, vLLM backbones); here the
LLM and the embedder are swapped for the fakes and the data for the smoke split, so what is
checked is the plumbing each experiment exercises (its retriever, atomizer, sieve, decomposition,
judge and fidelity settings), not its numbers.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hydra import initialize_config_dir

from atomicrag.core.config import register_configs, to_dataclass
from atomicrag.harness.experiments import compose_experiment
from atomicrag.harness.pipeline import run_one
from atomicrag.harness.report_tables import experiment_names

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
register_configs()
NAMES = experiment_names(offline_only=True)


@pytest.fixture(scope="module")
def released_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # the published rows send the released prompts: a synthetic checkout (invented texts) stands in
    from tests.prompts.released_tree import make_tree

    return make_tree(tmp_path_factory.mktemp("released") / "AtomicRAG")


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # one cache for the module: experiments that share an atomizer reuse its graph
    return tmp_path_factory.mktemp("exp_cache")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_experiment_runs_for_one_question(name: str, shared_cache: Path, tmp_path: Path, smoke_data,
                                          released_tree: Path) -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        dcfg = compose_experiment(  # as the entry point: experiment_name is the folder
            name,
            [
                "llm=fake", "embedder=fake", "dataset.split=smoke",
                # the smoke sets hold their passage corpus only (a row may index the authors' chunk file)
                "dataset.corpus_file=null",
                "dataset.limit=1", "retriever.reranker=null", "retriever.query_entities=spacy",
                # the released judge is gpt-4o-mini + bge-large; offline the fakes grade (judge=run)
                "judge.llm_source=run", "judge.embedder_source=run",
                f"paths.cache_dir={shared_cache}", f"paths.results_dir={tmp_path}",
                f"paths.llm_cache={shared_cache / 'llm.sqlite'}",
                f"fidelity.released_code={released_tree}",
            ],
        )
    cfg = to_dataclass(dcfg)
    metrics = run_one(cfg)
    assert metrics["n_questions"] == 1
    assert metrics["experiment"] == cfg.experiment_name == name.split("/")[0]
    assert metrics["prompts"]["source"] == cfg.fidelity.prompts and isinstance(metrics["differences"], list)
    if cfg.judge.name == "llm" and cfg.reader.name != "none":
        assert "judge" in metrics  # the answer-accuracy judge ran and reported its verdicts
    if cfg.retriever.name != "dense_passage":
        assert metrics["graph_stats"]["atoms"] > 0
