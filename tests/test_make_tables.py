"""scripts/make_tables.py: fake runs in, paper-vs-measured tables (Markdown, CSV, PNG) out."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from atomicrag.harness.report_tables import TABLES, experiment_names, find_paper_tables, make_tables

ROOT = Path(__file__).resolve().parent.parent
# accounting key, prompt tokens, wall seconds: the index timer wraps atomization, whose LLM calls are
# accounted under "atomize"; query NER under "retrieve_ner"
MODULES = [("chunk", 0, 0.1), ("index", 0, 1.0), ("atomize", 1000, 0.9), ("decompose", 2000, 2.0),
           ("retrieve", 0, 3.0), ("retrieve_ner", 500, 0.5), ("sieve", 4000, 4.0), ("answer", 5000, 5.0),
           ("judge", 6000, 6.0)]
GB_TYPES = ["Fact Retrieval", "Complex Reasoning", "Contextual Summarize", "Creative Generation"]

PAPER = json.loads(find_paper_tables().read_text())  # the package's copy: never missing


def write_run(
    root: Path, experiment: str, dataset: str, name: str, cfg: dict, *, acc: float | None = None,
    f1: float = 50.0, recall5: float = 60.0, stats: dict | None = None, finished: str = "2025-01-01T00:00:00",
    fidelity: str = "reference_code", predictions: list[dict] | None = None, row: str | None = None,
) -> Path:
    """A run folder as atomicrag.harness.tracking writes it (metrics.json + config.yaml); ``row`` is
    the row label its experiment file records (make_tables fills that row), else the folder name."""
    path = root / experiment / dataset / "dev" / name
    path.mkdir(parents=True)
    full = {
        "experiment": experiment, "row_label": row or name,
        "dataset": {"name": dataset, "split": "dev"},
        "llm": {"model": "gpt-4o-mini"}, "embedder": {"model": "BAAI/bge-large-en-v1.5"},
        "fidelity": {"preset": fidelity, "prompts": "released"},  # own prompts: tests/test_intervals_averages.py
        "retriever": {"name": "ppr", "damping": 0.3, "atom_seed_weight": 0.1, "top_k": 25, "reranker": None},
        "atomizer": {"name": "llm"}, "decompose": {"name": "llm"}, "sieve": {"name": "llm", "max_context": 25},
    }
    for dotted, value in cfg.items():
        section, attr = dotted.split(".")
        full[section][attr] = value
    metrics = {
        "dataset": dataset, "split": "dev", "n_questions": 20, "experiment": experiment, "run_name": name,
        "finished_at": finished,
        "headline": {"name": "acc" if acc is not None else "f1", "value": acc if acc is not None else f1},
        "overall": {"em": f1 - 10, "f1": f1, "recall@2": recall5 - 10, "recall@5": recall5},
        "by_type": {t: {"em": f1 - 10, "f1": f1 + i, "n": 5} for i, t in enumerate(GB_TYPES)},
        "cost": {  # as atomicrag.harness.pipeline.cost_summary writes it
            "modules": {m: {"prompt_tokens": p, "completion_tokens": p // 10, "total_tokens": p + p // 10,
                            "calls": 20 if p else 0, "wall_s": w}
                        for m, p, w in MODULES},
            "seconds_per_query": 1.5, "retrieval_ms_per_query": 200.0,
            "retrieval_ms_per_query_released": 450.0, "qa_tokens": 12650, "index_tokens": 1100,
            "total_prompt_tokens": 13750, "total_completion_tokens": 1375, "tokens_per_query": 632.5,
            "wall_seconds": 60.0,
        },
        # the rest of what harness/metrics_file.py requires (load_runs skips a file without it)
        "by_native_type": {}, "avg_over_types": {}, "row_label": row or name, "git_commit": None, "environment": {},
        "models": {"llm": full["llm"]["model"], "embedder": full["embedder"]["model"]},
        "graph_stats": stats or {},
        "config": {"retriever": full["retriever"]["name"], "damping": full["retriever"]["damping"]},
    }
    if acc is not None:
        metrics["overall"]["acc"] = acc
        metrics["acc_table"] = {"fact": acc + 1, "reason": acc - 1, "summ": acc + 2, "creat": acc - 2, "avg": acc}
    (path / "metrics.json").write_text(json.dumps(metrics))
    (path / "config.yaml").write_text(yaml.safe_dump(full))
    if predictions is not None:
        (path / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
    return path


ABLATIONS = {  # paper row -> config of our run
    "AtomicRAG": {},
    "w/o ERGR": {"retriever.name": "dense"},
    "w/o AQD": {"decompose.name": "none"},
    "w/o AS": {"sieve.name": "none"},
    "w/o KA": {"atomizer.atom_unit": "chunks"},  # LLM entities and triples kept, chunks as nodes
}


def test_table2_markdown_and_csv_carry_published_numbers_and_differences(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for i, (row, cfg) in enumerate(ABLATIONS.items()):
        write_run(results, "table2", "graphbench_medical", f"run{i}", cfg, acc=70.0 - i, row=row)
    written = make_tables(results, tables=["table2"], plots=False)
    md = written["table2"]["md"].read_text()
    # AtomicRAG on Medical: measured 70.0 beside the published 73.2 and the difference
    assert "70.0 ref (73.2, \u22123.2)" in md
    # w/o ERGR measured 69.0 vs 72.0; its measured drop (1.0) vs the published drop (1.2)
    assert "69.0 ref (72.0, \u22123.0)" in md
    assert "1.0 ref (1.2, \u22120.2)" in md
    # rows not run yet are marked, with the published number still shown
    assert "\u2014 (54.0)" in md  # w/o {ERGR, AQD, AS, KA} HotpotQA
    assert "ACC (%)" in md and "(9/64 measured cells filled)" in md

    with written["table2"]["csv"].open() as fh:
        rows = {r["row"]: r for r in csv.DictReader(fh)}
    assert float(rows["AtomicRAG"]["medical.avg"]) == pytest.approx(70.0)
    assert float(rows["AtomicRAG"]["medical.avg.published"]) == pytest.approx(73.2)
    assert float(rows["AtomicRAG"]["medical.avg.diff"]) == pytest.approx(-3.2)
    assert rows["w/o {ERGR, AQD}"]["medical.avg"] == ""
    assert float(rows["w/o {ERGR, AQD}"]["medical.avg.published"]) == pytest.approx(70.8)
    index = (results / "README.md").read_text()
    assert "tables/table2.md" in index


def test_table2_smoke_labels_f1_and_shows_published_acc(tmp_path: Path) -> None:
    results = tmp_path / "results"
    smoke = {**ABLATIONS, "AtomicRAG": {"atomizer.name": "sentence"}, "w/o KA": {"atomizer.name": "chunk"}}
    for i, (row, cfg) in enumerate(smoke.items()):
        cfg = {"atomizer.name": "sentence", **cfg}
        write_run(results, "table2_smoke", "2wikimultihopqa", f"run{i}", cfg, f1=40.0 - 2 * i, recall5=80.0 - i,
                  fidelity="paper", row=row)
    md = make_tables(results, tables=["table2_smoke"], plots=False)["table2_smoke"]["md"].read_text()
    assert "F1" in md.split("\n| Variant")[0]  # the measured metric is named before the table
    header = next(line for line in md.splitlines() if line.startswith("| Variant"))
    assert "paper ACC HotpotQA" in header and "F1 2Wiki-smoke" in header
    full = next(line for line in md.splitlines() if line.startswith("| AtomicRAG |"))
    assert "40.0" in full and "70.5" in full  # measured F1 next to the published ACC
    ergr = next(line for line in md.splitlines() if line.startswith("| w/o ERGR |"))
    assert "| 2.0 paper |" in ergr and "| 2.1 |" in ergr  # measured F1 drop; published HotpotQA drop


def test_metric_f1_on_a_paper_table_is_not_differenced(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, "table2", "graphbench_medical", "full", {}, f1=30.0, row="AtomicRAG")
    md = make_tables(results, tables=["table2"], metric="f1", plots=False)["table2"]["md"].read_text()
    full = next(line for line in md.splitlines() if line.startswith("| AtomicRAG |"))
    assert "31.5 ref (73.2) " in full + " "  # mean F1 over the four types beside the published ACC, no difference
    assert "NOT the paper's ACC" in md


def test_table12_sweep_writes_a_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    results = tmp_path / "results"
    for i, rho in enumerate([0.1, 0.3, 0.5, 0.7, 0.9]):
        write_run(results, "table12", "graphbench_medical", f"rho{i}", {"retriever.damping": rho}, acc=65.0 + i,
                  row=str(rho))
    written = make_tables(results, tables=["table12", "table13"])
    png = written["table12"]["png"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    md = written["table12"]["md"].read_text()
    assert "66.0 ref (73.1, \u22127.1)" in md  # rho=0.3 measured beside the published default
    assert "table12.png" in md
    assert written["table13"]["png"].is_file()  # published-only sweep still plots


def test_graph_stats_and_cost_tables(tmp_path: Path) -> None:
    results = tmp_path / "results"
    stats = {"nodes": 100, "entities": 60, "atoms": 40, "edges": 300, "related_edges": 100, "synonym_edges": 120,
             "containment_edges": 80, "avg_degree": 6.0, "avg_clustering": 0.31, "containment_per_atom": 2.0}
    write_run(results, "table6", "graphbench_medical", "g", {"decompose.name": "none"}, stats=stats, row="Medical")
    write_run(results, "table4", "graphbench_medical", "ours", {}, acc=71.0, row="Ours")
    written = make_tables(results, tables=["table3", "table6", "table4", "table7"], plots=False)
    assert "100 ref (14,586, \u221214,486)" in written["table3"]["md"].read_text()
    t7 = written["table7"]["md"].read_text()
    total = next(line for line in t7.splitlines() if line.startswith("| Total |"))
    assert "15.00 ref (2,018.46" in total  # index 1 + decompose 2 + retrieve 3 + sieve 4 + answer 5 s, no judge
    assert "13,750 ref (16,171,436" in total  # atomize 1,100 + 2,200 + NER 550 + 4,400 + 5,500 tokens
    ergr = next(line for line in t7.splitlines() if line.startswith("| Entity-Resonance"))
    assert "| 550 ref |" in ergr  # query NER tokens; the paper prints none
    t4 = written["table4"]["md"].read_text()
    assert "0.01 ref (2.63" in t4  # QA tokens as the paper counts them: the answer module only, 5,500 = 0.0055 M
    # the published latency is compared with the released definition (AQD + retrieve + AS) ...
    assert "0.45 ref (0.79, \u22120.34)" in t4
    assert "| 0.20 ref |" in t4  # ... and the retrieve module alone stands beside it, undifferenced


def test_newest_run_wins_and_where_filters(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, "table10", "graphbench_medical", "a", {"llm.model": "gpt-4o-mini"}, acc=60.0,
              finished="2025-01-01T00:00:00", row="GPT-4o-mini")
    write_run(results, "table10", "graphbench_medical", "b", {"llm.model": "gpt-4o-mini"}, acc=62.0,
              finished="2025-02-01T00:00:00", row="GPT-4o-mini")
    md = make_tables(results, tables=["table10"], plots=False)["table10"]["md"].read_text()
    assert "62.0 ref (73.1" in md and "2 runs match" in md
    md = make_tables(results, tables=["table10"], plots=False, where={"fidelity.preset": "paper"})[
        "table10"]["md"].read_text()
    assert "62.0" not in md


def test_every_table_builds_with_no_runs(tmp_path: Path) -> None:
    written = make_tables(tmp_path / "results", plots=False)
    assert set(written) == set(TABLES)
    for files in written.values():
        assert "\u2014" in files["md"].read_text() or "none yet" in files["md"].read_text()


def test_cli(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, "table2", "graphbench_medical", "full", {}, acc=70.0, row="AtomicRAG")
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_tables.py"), "--results", str(results), "--table", "table2",
         "--no-plots"], capture_output=True, text=True, check=True,
    )
    assert "table2.md" in out.stdout
    assert (results / "tables" / "table2.csv").is_file()


def test_experiment_names_cover_every_table_folder() -> None:
    names = experiment_names()
    assert "table2/medical_wo_ergr" in names and "table2_smoke/full" in names and "table12/sweep" in names
    folders = {n.split("/")[0] for n in names}
    assert {"table1", "table2", "table4", "table6", "table8", "table9", "table10", "table11", "table12",
            "table13", "fig4", "fig5", "table2_smoke"} <= folders
    assert experiment_names(prefix="table2_smoke/") == [n for n in names if n.startswith("table2_smoke/")]
    offline = experiment_names(offline_only=True)
    assert "table1/medical_atomicrag" in offline and "table1/hotpotqa_rag" not in offline
    assert not any("musique" in n for n in offline)


def test_every_table_links_an_existing_readme() -> None:
    for name, factory in TABLES.items():
        readme = factory("acc").readme.split("#")[0]
        assert readme and (ROOT / readme).is_file(), name


def _preds(values: dict[str, float], metric: str = "acc", qtype: str = "Fact Retrieval") -> list[dict]:
    return [{"question_id": q, "question_type": qtype, metric: v} for q, v in values.items()]


def test_paper_fidelity_cells_are_labelled_and_never_differenced(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, "table12", "graphbench_medical", "ref", {"retriever.damping": 0.3}, acc=66.0, row="0.3")
    write_run(results, "table12", "graphbench_medical", "txt", {"retriever.damping": 0.5}, acc=60.0,
              fidelity="paper", row="0.5")
    md = make_tables(results, tables=["table12"], plots=False)["table12"]["md"].read_text()
    assert "66.0 ref (73.1, \u22127.1)" in md  # reference_code: compared with the published number
    row = next(line for line in md.splitlines() if line.startswith("| 0.5 |"))
    assert "60.0 paper (" in row and "\u2212" not in row.split("paper (")[1].split(")")[0]


def test_cells_carry_n_bootstrap_interval_and_paired_drop(tmp_path: Path) -> None:
    """n, a 95% interval from predictions.jsonl, the real n in the header, a paired drop interval."""
    import random

    rng = random.Random(0)
    results = tmp_path / "results"
    qids = [f"q{i}" for i in range(200)]
    full = {q: rng.random() for q in qids}  # per-question score in [0, 1]
    ergr = {q: max(0.0, v - 0.05 + 0.02 * rng.random()) for q, v in full.items()}  # every question a bit lower
    mean_full = 100 * sum(full.values()) / len(full)
    mean_ergr = 100 * sum(ergr.values()) / len(ergr)
    write_run(results, "table2", "hotpotqa", "full", {}, acc=mean_full, predictions=_preds(full), row="AtomicRAG")
    write_run(results, "table2", "hotpotqa", "ergr", {"retriever.name": "dense"}, acc=mean_ergr,
              predictions=_preds(ergr), row="w/o ERGR")
    for r in ("full", "ergr"):  # overall acc as the pipeline writes it for a multi-hop dataset
        m = results / "table2" / "hotpotqa" / "dev" / r / "metrics.json"
        d = json.loads(m.read_text())
        d["overall"]["acc"] = mean_full if r == "full" else mean_ergr
        m.write_text(json.dumps(d))
    written = make_tables(results, tables=["table2"], plots=False)
    md = written["table2"]["md"].read_text()
    header = next(line for line in md.splitlines() if line.startswith("| Variant"))
    assert "HotpotQA (n=200)" in header
    with written["table2"]["csv"].open() as fh:
        rows = {r["row"]: r for r in csv.DictReader(fh)}
    lo, hi = float(rows["AtomicRAG"]["hotpotqa.ci_lo"]), float(rows["AtomicRAG"]["hotpotqa.ci_hi"])
    assert lo < mean_full < hi and 4.0 < hi - lo < 12.0  # sd ~29 / sqrt(200) ~ 2: width ~ 8
    assert rows["AtomicRAG"]["hotpotqa.n"] == "200" and rows["AtomicRAG"]["hotpotqa.fidelity"] == "reference_code"
    # the paired drop is far narrower than either cell's interval: the same questions in both runs
    dlo, dhi = float(rows["w/o ERGR"]["hotpotqa.drop.ci_lo"]), float(rows["w/o ERGR"]["hotpotqa.drop.ci_hi"])
    drop = mean_full - mean_ergr
    assert dlo < drop < dhi and dhi - dlo < 1.0 and dlo > 0
    assert rows["w/o ERGR"]["hotpotqa.drop.n"] == "200"
    # the published AtomicRAG HotpotQA value (70.5) is outside [~46, ~54]: no mark; drop 1.7 inside? no
    assert rows["AtomicRAG"]["hotpotqa.published_inside"] == "0"


def test_interval_marks_a_published_value_inside() -> None:
    from atomicrag.harness.report_tables.table import Cell

    assert Cell(measured=50.0, published=51.0, ci=(47.0, 53.0)).inside is True
    assert Cell(measured=50.0, published=60.0, ci=(47.0, 53.0)).inside is False
    assert Cell(measured=50.0, published=60.0).inside is None


def test_stratified_interval_of_a_type_average(tmp_path: Path) -> None:
    """Graph-Bench Avg. resamples within each type: a tiny type cannot swing the whole average away."""
    from atomicrag.harness.report_tables.intervals import bootstrap_ci, strata
    from atomicrag.harness.report_tables.runs import Run

    recs = ([{"question_id": f"f{i}", "question_type": "Fact Retrieval", "acc": 1.0} for i in range(50)]
            + [{"question_id": f"r{i}", "question_type": "Complex Reasoning", "acc": float(i % 2)} for i in range(50)])
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    run = Run(tmp_path, {}, {})
    s = strata(run, ("graphbench", "avg", "acc"))
    assert {k: len(v) for k, v in s.items()} == {"Fact Retrieval": 50, "Complex Reasoning": 50}
    lo, hi = bootstrap_ci(s)
    assert lo < 75.0 < hi and lo > 60.0  # fact is always 100: only reasoning's half varies
    fact = strata(run, ("graphbench", "fact", "acc"))
    assert bootstrap_ci(fact) == (100.0, 100.0)
