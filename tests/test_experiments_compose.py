"""Every committed experiment (conf/experiment/**.yaml) composes, validates, and fills its table row."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("hydra")
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from atomicrag.config import Config, register_configs, to_dataclass
from atomicrag.report_tables import TABLES, experiment_names
from atomicrag.report_tables.runs import Run, values_equal

CONF = Path(__file__).resolve().parent.parent / "conf"
NAMES = experiment_names(CONF)


@pytest.fixture(scope="module")
def composed() -> dict[str, tuple[Config, dict]]:
    """Every experiment composed once: name -> (validated Config, plain dict)."""
    register_configs()
    out = {}
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for name in NAMES:
            cfg = compose("config", overrides=[f"+experiment={name}"])
            out[name] = (to_dataclass(cfg), OmegaConf.to_container(cfg, resolve=True))
    return out


def test_there_is_an_experiment_per_table_point() -> None:
    assert len(NAMES) >= 100
    counts = {t: sum(n.startswith(t + "/") for n in NAMES) for t in ("table1", "table2", "table12", "table13", "fig4")}
    assert counts == {"table1": 15, "table2": 24, "table12": 9, "table13": 12, "fig4": 6}
    for name in NAMES:
        text = (CONF / "experiment" / f"{name}.yaml").read_text()
        assert text.startswith("# @package _global_\n"), name


@pytest.mark.parametrize("name", NAMES)
def test_experiment_composes_and_validates(composed: dict, name: str) -> None:
    cfg, _ = composed[name]
    folder = name.split("/")[0]
    assert cfg.experiment_name == ("table2_smoke" if folder == "smoke" else folder)
    assert cfg.baselines == []  # one row per run: vanilla RAG rows are their own experiments
    if folder == "smoke":
        assert (cfg.llm.model_path, cfg.embedder.model, cfg.judge.name) == ("smollm2", "minilm", "none")
        assert cfg.dataset.split == "smoke"
    else:
        assert cfg.fidelity.preset == "paper"
        assert cfg.judge.name == ("none" if folder == "table6" else "llm")


def test_ablation_rows_change_exactly_their_fields(composed: dict) -> None:
    def key(name: str) -> tuple[str, str, str, str]:
        c = composed[name][0]
        return (c.retriever.name, c.decompose.name, c.sieve.name, c.atomizer.name)

    for ds in ("hotpotqa", "medical", "novel"):
        assert key(f"table2/{ds}_full") == ("ppr", "llm", "llm", "llm")
        assert key(f"table2/{ds}_wo_ergr") == ("dense", "llm", "llm", "llm")
        assert key(f"table2/{ds}_wo_aqd") == ("ppr", "none", "llm", "llm")
        assert key(f"table2/{ds}_wo_as") == ("ppr", "llm", "none", "llm")
        assert key(f"table2/{ds}_wo_ka") == ("ppr", "llm", "llm", "chunk")
        assert key(f"table2/{ds}_wo_all") == ("dense", "none", "none", "chunk")
    assert key("smoke/table2_full") == ("ppr", "llm", "llm", "sentence")
    assert key("smoke/table2_wo_ka") == ("ppr", "llm", "llm", "chunk")
    full, ablated = composed["table2/medical_full"][1], composed["table2/medical_wo_as"][1]
    diff = {s for s in full if full[s] != ablated[s]}
    assert diff == {"sieve"}


def test_sweeps_set_their_field(composed: dict) -> None:
    assert composed["table12/damping_0_7"][0].retriever.damping == pytest.approx(0.7)
    assert composed["table13/seed_0_05"][0].retriever.atom_seed_weight == pytest.approx(0.05)
    k = composed["fig4/topk_5"][0]
    assert (k.retriever.top_k, k.sieve.max_context) == (5, 5)
    assert composed["fig5/ctx_16"][0].sieve.max_context == 16
    assert composed["table8/nomic_embed"][0].embedder.model == "nomic-ai/nomic-embed-text-v1.5"
    assert composed["table10/qwen7b"][0].llm.model == "Qwen/Qwen2.5-7B-Instruct"
    assert composed["table11/katz"][0].retriever.name == "katz"
    rr = composed["table1/musique_rag_rerank"][0]
    assert (rr.retriever.name, rr.retriever.reranker, rr.dataset.name) == (
        "dense_passage", "BAAI/bge-reranker-large", "musique")


def test_command_line_overrides_beat_the_experiment() -> None:
    """The READMEs' GPU commands swap the LLM (and limit questions) on top of an experiment."""
    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[
            "+experiment=table2/medical_wo_ergr", "llm=vllm_qwen14b", "llm.base_url=http://127.0.0.1:8000/v1",
            "dataset.limit=1", "retriever.damping=0.5",
        ])
    c = to_dataclass(cfg)
    assert (c.llm.model, c.llm.base_url, c.dataset.limit) == ("Qwen/Qwen2.5-14B-Instruct", "http://127.0.0.1:8000/v1", 1)
    assert c.retriever.name == "dense" and c.retriever.damping == 0.5


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_table_row_has_an_experiment(composed: dict, table: str) -> None:
    """make_tables' row matching agrees with the committed configs: no row is left without a run to fill it."""
    spec = TABLES[table]("acc")
    runs = []
    for name, (cfg, plain) in composed.items():
        if cfg.experiment_name in spec.experiments:
            runs.append(Run(Path(name), {"experiment": cfg.experiment_name, "dataset": cfg.dataset.name}, plain))
    for row in spec.rows:
        datasets = {c.dataset or row.dataset for c in spec.columns if c.measured and (c.extract or row.extract)}
        for ds in datasets:
            hits = [r for r in runs if (ds is None or r.dataset == ds)
                    and all(values_equal(r.cfg(k), v) for k, v in row.match.items())]
            assert len(hits) == 1, f"{table} row {row.label!r} on {ds}: {len(hits)} experiments match"
