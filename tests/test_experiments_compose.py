"""Every committed experiment (conf/experiment/**.yaml) composes, validates, and fills its table row."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("hydra")
from hydra import initialize_config_dir
from omegaconf import OmegaConf

from atomicrag.core.config import Config, register_configs, to_dataclass
from atomicrag.harness.experiments import compose_experiment
from atomicrag.harness.report_tables import TABLES, experiment_names
from atomicrag.harness.report_tables.declared import experiment_points
from atomicrag.harness.rows import TABLE2_ROWS, ablation_label

CONF = Path(__file__).resolve().parent.parent / "conf"
NAMES = experiment_names(CONF)
# sweep files: a point per value of their hydra.sweeper.params (the test composes each)
SWEEPS = {name: experiment_points(name) for name in NAMES if len(experiment_points(name)) > 1}
POINTS = [name for name in NAMES if name not in SWEEPS] + [
    f"{name} {p.field}={p.value}" for name, points in SWEEPS.items() for p in points]


def _compose(point: str):
    name, *overrides = point.split()
    return compose_experiment(name, overrides)


@pytest.fixture(scope="module")
def composed() -> dict[str, tuple[Config, dict]]:
    """Every experiment (each sweep point) composed once: point -> (validated Config, plain dict)."""
    register_configs()
    out = {}
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for point in POINTS:
            cfg = _compose(point)
            out[point] = (to_dataclass(cfg), OmegaConf.to_container(cfg, resolve=True))
    return out


def test_there_is_an_experiment_per_table_point() -> None:
    assert len(POINTS) >= 100
    counts = {t: sum(n.startswith(t + "/") for n in POINTS) for t in ("table1", "table2", "table12", "table13", "fig4")}
    # Table 2 has 7 rows x 3 datasets: its all-ablated row is Table 1's vanilla RAG run
    assert counts == {"table1": 15, "table2": 21, "table12": 9, "table13": 12, "fig4": 6}
    for name in NAMES:
        text = (CONF / "experiment" / f"{name}.yaml").read_text()
        assert text.startswith("# @package _global_\n"), name
        # a row is a delta over a committed preset, a few lines long, carrying its label; the
        # folder names the experiment and the paper preset the fidelity: no file restates them
        assert "  - override /preset: " in text and "row_label:" in text, name
        assert "experiment_name" not in text and "/fidelity" not in text, name
        assert len(text.splitlines()) <= 16, name


def test_sweep_files_sweep_every_point_of_their_table() -> None:
    """A sweep's table has one row per point of its hydra.sweeper.params (what -m runs), in order."""
    assert set(SWEEPS) == {"table12/sweep", "table13/sweep", "fig4/sweep", "fig5/sweep"}
    for name, points in SWEEPS.items():
        spec = TABLES[name.split("/")[0]]("acc")
        assert [r.sources for r in spec.rows] == [((p.experiment, p.label),) for p in points], name


@pytest.mark.parametrize("name", POINTS)
def test_experiment_composes_and_validates(composed: dict, name: str) -> None:
    cfg, _ = composed[name]
    folder = name.split("/")[0]
    assert cfg.experiment_name == folder  # derived from the folder (atomicrag/harness/experiments.py)
    assert cfg.baselines == []  # one row per run: vanilla RAG rows are their own experiments
    # conf/preset/quickstart.yaml's values (failure allowance, reader budget, context) do not leak
    if folder == "table2_smoke":  # a 135M model on a CPU: the preset's own allowance, stated in it
        assert (cfg.max_failure_rate, cfg.reader.max_tokens) == (0.25, 160)
    elif folder == "table2_retrieval":  # retrieval only, offline models: no reader, no published cell
        assert (cfg.max_failure_rate, cfg.reader.max_tokens) == (0.0, 512)
    else:
        # the published rows: the released budget (max_new_tokens 2048) and the released prompts
        assert (cfg.max_failure_rate, cfg.reader.max_tokens, cfg.decompose.max_tokens) == (0.0, 2048, 2048)
        assert cfg.fidelity.prompts == "released"
    assert cfg.sieve.max_context == 25 or folder in ("fig4", "fig5")  # those sweep it
    if folder == "table2_smoke":
        assert (cfg.llm.model_path, cfg.embedder.model, cfg.judge.name) == ("smollm2", "minilm", "none")
        assert cfg.dataset.split == "smoke"
    elif folder == "table2_retrieval":  # offline, no published cell: the paper-text reading
        assert (cfg.dataset.split, cfg.reader.name, cfg.judge.name, cfg.fidelity.preset) == ("dev", "none", "none", "paper")
    else:  # every published row runs what produced the published numbers
        assert cfg.fidelity.preset == "reference_code"
        assert cfg.graph.containment_keys == "raw" and cfg.retriever.damping_semantics == "continue"
        assert cfg.judge.name == ("none" if folder == "table6" else "llm")
        assert cfg.row_label


def test_paper_text_twin_is_one_override() -> None:
    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        ref = to_dataclass(compose_experiment("table12/sweep", ["retriever.damping=0.7"]))
        twin = to_dataclass(compose_experiment("table12/sweep", ["retriever.damping=0.7", "fidelity=paper"]))
    assert (ref.fidelity.preset, twin.fidelity.preset) == ("reference_code", "paper")
    assert twin.retriever.damping_semantics == "restart" and twin.retriever.damping == pytest.approx(0.7)
    assert twin.row_label == ref.row_label == "0.7"


def test_published_rows_grade_with_the_released_judge(composed: dict) -> None:
    """Table 10's backbones and Table 8's embedders do not grade themselves."""
    for name in ("table10/qwen7b", "table8/nomic_embed"):
        cfg = composed[name][0]
        assert (cfg.judge.llm_source, cfg.judge.embedder_source) == ("own", "own")
        assert cfg.judge.llm.model == "gpt-4o-mini" and cfg.judge.llm.seed == 42
        assert cfg.judge.embedder.model == "BAAI/bge-large-en-v1.5" and cfg.judge.embedder.pooling == "cls"


def test_ablation_rows_change_exactly_their_fields(composed: dict) -> None:
    def key(name: str) -> tuple[str, str, str, str]:
        c = composed[name][0]
        return (c.retriever.name, c.decompose.name, c.sieve.name, c.atomizer.name)

    for ds in ("hotpotqa", "medical", "novel"):
        assert key(f"table2/{ds}_full") == ("ppr", "llm", "llm", "llm")
        assert key(f"table2/{ds}_wo_ergr") == ("dense", "llm", "llm", "llm")
        assert key(f"table2/{ds}_wo_aqd") == ("ppr", "none", "llm", "llm")
        assert key(f"table2/{ds}_wo_as") == ("ppr", "llm", "none", "llm")
        # w/o KA keeps the LLM's entity and triple extraction; only the atoms become chunks
        assert key(f"table2/{ds}_wo_ka") == ("ppr", "llm", "llm", "llm")
        assert composed[f"table2/{ds}_wo_ka"][0].atomizer.atom_unit == "chunks"
        assert composed[f"table2/{ds}_full"][0].atomizer.atom_unit == "atoms"
        # the all-ablated row is Table 1's vanilla RAG: one config
        assert key(f"table1/{ds}_rag") == ("dense_passage", "none", "none", "chunk")
    assert key("table2_smoke/full") == ("ppr", "llm", "llm", "sentence")
    assert key("table2_smoke/wo_ka") == ("ppr", "llm", "llm", "chunk")
    full, ablated = composed["table2/medical_full"][1], composed["table2/medical_wo_as"][1]
    diff = {s for s in full if full[s] != ablated[s]}
    assert diff == {"sieve", "row_label"}
    full, no_ka = composed["table2/medical_full"][1], composed["table2/medical_wo_ka"][1]
    assert {s for s in full if full[s] != no_ka[s]} == {"atomizer", "row_label"}


def test_sweeps_set_their_field(composed: dict) -> None:
    # the row label is the swept value as the paper prints it (make_tables matches rows on it)
    d = composed["table12/sweep retriever.damping=0.7"][0]
    assert (d.retriever.damping, d.row_label) == (pytest.approx(0.7), "0.7")
    s = composed["table13/sweep retriever.atom_seed_weight=0.05"][0]
    assert (s.retriever.atom_seed_weight, s.row_label) == (pytest.approx(0.05), "0.05")
    assert composed["table13/sweep retriever.atom_seed_weight=1.0"][0].row_label == "1.0"
    k = composed["fig4/sweep retriever.top_k=5"][0]
    assert (k.retriever.top_k, k.sieve.max_context, k.row_label) == (5, 5, "k=5")
    c = composed["fig5/sweep sieve.max_context=16"][0]
    assert (c.sieve.max_context, c.row_label) == (16, "16 atoms")
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
        cfg = compose_experiment("table2/medical_wo_ergr", [
            "llm=vllm_qwen14b", "llm.base_url=http://127.0.0.1:8000/v1",
            "dataset.limit=1", "retriever.damping=0.5",
        ])
    c = to_dataclass(cfg)
    assert (c.llm.model, c.llm.base_url, c.dataset.limit) == ("Qwen/Qwen2.5-14B-Instruct", "http://127.0.0.1:8000/v1", 1)
    assert c.retriever.name == "dense" and c.retriever.damping == 0.5


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_table_row_has_an_experiment(composed: dict, table: str) -> None:
    """Each row's (experiment, row label) is what the named experiment files record when composed
    (a sweep's resolved per point), and one experiment point fills it per dataset it reads."""
    spec = TABLES[table]("acc")
    recorded = [(cfg.experiment_name, cfg.row_label, cfg.dataset.name) for cfg, _plain in composed.values()]
    for row in spec.rows:
        datasets = {c.dataset or row.dataset for c in spec.columns if c.measured and (c.extract or row.extract)}
        for ds in datasets:
            hits = [r for r in recorded if (r[0], r[1]) in row.sources and (ds is None or r[2] == ds)]
            assert len(hits) == 1, f"{table} row {row.label!r} on {ds}: {len(hits)} experiments fill it"


def test_table2_rows_are_a_preset_and_a_list_of_ablations(composed: dict) -> None:
    """Each Table 2 experiment names its ablations (conf/ablation/) and carries the label the
    manifest gives them; make_tables' rows and the harness's own labels read the same files."""
    import re

    from atomicrag.harness.pipeline import row_label

    labels = {ablation_label(c) for c in TABLE2_ROWS}
    for name in NAMES:
        if name.split("/")[0] not in ("table2", "table2_smoke", "table2_retrieval"):
            continue
        text = (CONF / "experiment" / f"{name}.yaml").read_text()
        listed = re.search(r"  - /ablation: \[([^\]]*)\]", text)
        components = tuple(a.split("_")[0] for a in listed.group(1).split(", ")) if listed else ()
        cfg = composed[name][0]
        assert cfg.row_label == ablation_label(components) and cfg.row_label in labels, name
        # the harness's label of the same config names the same ablations (ERGR: the retriever)
        assert all(f"w/o {part}" in row_label(cfg) for part in cfg.row_label.removeprefix("w/o ").strip("{}").split(", ")
                   if cfg.row_label != "AtomicRAG" and part != "ERGR"), name
