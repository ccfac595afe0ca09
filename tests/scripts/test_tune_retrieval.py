"""The retrieval ablation's rows are composed by ``load_config`` (an option extending another with
``defaults:`` included), and they are the configurations the committed record was measured with."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ablation_rows_compose_to_the_committed_records_configurations() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import tune_retrieval as t
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rows = dict(t.ablation_rows())
    base = t.load_config({}, env_prefix=None)
    # the preset row is the library's hybrid retriever, ppr_minilm fields (its defaults list) included
    assert t.with_retriever(base, rows["hybrid (retriever=hybrid)"]).retriever == \
        t.load_config({"retriever": "hybrid"}, env_prefix=None).retriever
    record = json.loads((ROOT / "results/retrieval_2wiki/ablation_half1.json").read_text())
    measured = {r["label"]: r["retriever"] for r in record["results"]}
    assert list(rows) == list(measured)
    for label, fields in rows.items():
        assert t.with_retriever(base, fields).retriever == t.with_retriever(base, measured[label]).retriever, label


def test_the_search_rows_are_the_committed_search_and_hold_the_chosen_preset() -> None:
    """``--search`` runs the configurations of the committed even-half search, and the library's
    ``hybrid`` preset is one of them: the point the README says the search chose."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import tune_retrieval as t
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rows = t.search_rows()
    base = t.load_config({}, env_prefix=None)
    record = json.loads((ROOT / "results/retrieval_2wiki/tune/search_half0.json").read_text())
    assert record["half"] == "even" and [r["label"] for r in record["results"]] == [label for label, _ in rows]
    for (label, fields), measured in zip(rows, record["results"]):
        assert t.with_retriever(base, fields).retriever == t.with_retriever(base, measured["retriever"]).retriever, label
    hybrid = t.load_config({"retriever": "hybrid"}, env_prefix=None).retriever
    chosen = [r for (_, f), r in zip(rows, record["results"]) if t.with_retriever(base, f).retriever == hybrid]
    assert chosen and chosen[0]["R@2"] == max(r["R@2"] for r in record["results"])


def test_a_variant_runs_through_the_engine_and_writes_its_record(tmp_path: Path, smoke_data: Path) -> None:
    """On the shipped 2Wiki smoke set: the script indexes and retrieves through Engine, and its record
    holds recall with intervals and the provenance that made it."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import tune_retrieval as t
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    out = tmp_path / "rows.json"
    t.main(["--split", "smoke", "--half", "all", "--data-dir", str(smoke_data), "--cache-dir", str(tmp_path / "cache"),
            "--point", "{}", "--point", '{"passage_ranking": "bridge"}', "--json", str(out)])
    record = json.loads(out.read_text())
    assert [r["label"] for r in record["results"]] == ["{}", '{"passage_ranking": "bridge"}']
    for row in record["results"]:
        assert row["n"] == 20 and 0 < row["R@2"] <= row["R@5"] <= 100 and len(row["R@5_ci95"]) == 2
    assert record["provenance"]["command"].startswith("python") and record["provenance"]["data_files"]
