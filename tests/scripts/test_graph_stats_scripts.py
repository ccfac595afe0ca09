"""The graph-statistics scripts (Tables 3 and 6, the indexing benchmark) compose their config as the
library does and say in their record what the index merged.

Each runs in a subprocess, as a user runs it, on a shipped smoke set or a small data tree, with the
fake embedder; the figures are not checked, what the record holds is.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.scripts.test_benchmark_scripts import ROOT, run_script, write_jsonl

# one document of twelve sentences said twice: long enough for several 256-token windows (32 tokens
# overlap), so a sentence in two windows' overlap is merged into one atom
SENTENCES = [f"Patient {chr(65 + i)} received treatment number {i} at the Northfield clinic in spring."
             for i in range(12)]


def raw_medical_tree(root: Path, smoke_data: Path) -> Path:
    """A data tree with Graph-Bench Medical's shipped smoke split and one raw document."""
    shutil.copytree(smoke_data / "graphbench_medical", root / "graphbench_medical")
    write_jsonl(root / "graphbench_medical" / "corpus_raw.jsonl",
                [{"id": "Medical", "title": "Medical", "text": " ".join(SENTENCES * 2)}])
    return root


def test_graph_stats_composes_a_dataset_that_extends_another(tmp_path: Path) -> None:
    """``conf/dataset/medical_dev.yaml`` extends ``medical_smoke`` with ``defaults:``; the script's
    own reader of group files did not follow it (``Key 'defaults' not in DatasetConfig``)."""
    out = tmp_path / "out"
    run_script([str(ROOT / "benchmarks/graph_stats.py"), "--dataset", "medical_dev", "--split", "smoke",
                "--embedder", "fake", "--cache-dir", str(tmp_path / "cache"), "--out", str(out),
                "--set", "fidelity.containment_keys=raw", "--set", "graph.synonym_threshold=0.95"], cwd=tmp_path)
    [record] = list(out.glob("*.json"))
    assert record.name == "sentence_fake_paper__containment_keys-raw__graph.synonym_threshold-0.95.json"
    rec = json.loads(record.read_text())
    assert rec["dataset"] == "graphbench_medical" and rec["split"] == "smoke"
    config = rec["provenance"]["config"]
    # the switch's old spelling (fidelity.containment_keys) lands in the graph section that owns it
    assert config["graph"]["containment_keys"] == "raw" and config["graph"]["synonym_threshold"] == 0.95
    assert rec["provenance"]["command"] and rec["provenance"]["git"]["commit"]


def test_graph_stats_rejects_an_unknown_key_by_name(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks/graph_stats.py"), "--dataset", "2wiki_smoke",
                           "--embedder", "fake", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path),
                           "--set", "fidelity.no_such_switch=1"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode != 0 and "no_such_switch" in proc.stderr
    assert not list(tmp_path.glob("*.json"))  # no record of a run that did not happen


def test_graph_stats_of_raw_documents_records_the_window_merge(tmp_path: Path, smoke_data: Path) -> None:
    data = raw_medical_tree(tmp_path / "data", smoke_data)
    out = tmp_path / "out"
    run_script([str(ROOT / "benchmarks/graph_stats.py"), "--dataset", "medical_smoke", "--raw", "--embedder", "fake",
                "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--set", f"paths.data_dir={data}"],
               cwd=tmp_path)
    rec = json.loads((out / "raw_sentence_fake_paper.json").read_text())
    merge = rec["window_merge"]
    assert rec["documents"] == "raw" and rec["passages"] == 1 and rec["chunks"] >= 2
    assert rec["passages_in_several_chunks"] == 1
    assert merge["merged"] > 0 and merge["atoms_before"] == merge["atoms_after"] + merge["merged"]
    # one atom per sentence of the document (a sentence said twice is two atoms: two positions)
    assert merge["atoms_after"] == rec["stats"]["atoms"] == 2 * len(SENTENCES)
    assert rec["atomize_stats"]["window_repeats_merged"] == merge["merged"]
    assert [Path(f).name for f in rec["provenance"]["data_files"]] == ["corpus_raw.jsonl"]
    # and without the merge every window keeps its copy
    run_script([str(ROOT / "benchmarks/graph_stats.py"), "--dataset", "medical_smoke", "--raw", "--embedder", "fake",
                "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--set", f"paths.data_dir={data}",
                "--set", "atomizer.merge_window_repeats=false"], cwd=tmp_path)
    [unmerged] = [p for p in out.glob("raw_*.json") if "merge_window_repeats" in p.name]
    assert json.loads(unmerged.read_text())["stats"]["atoms"] == merge["atoms_before"]


def test_fidelity_graph_stats_composes_each_variant(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_script([str(ROOT / "benchmarks/fidelity_graph_stats.py"), "--dataset", "2wiki_smoke", "--embedder", "fake",
                "--rechunk", "--cache-dir", str(tmp_path / "cache"), "--out", str(out),
                "--variant", "paper", "--variant", "paper+containment_keys=raw"], cwd=tmp_path)
    rec = json.loads((out / "fidelity_sentence_fake.json").read_text())
    rows = rec["variants"]
    assert set(rows) == {"paper", "paper+containment_keys=raw"}
    assert rows["paper"]["atoms"] == rows["paper+containment_keys=raw"]["atoms"]
    assert rows["paper+containment_keys=raw"]["containment_edges"] < rows["paper"]["containment_edges"]
    assert "window_repeats_merged" in rec["atomize_stats"] and rec["provenance"]["git"]["commit"]


def test_bench_indexing_composes_its_switches(tmp_path: Path, smoke_data: Path) -> None:
    out = tmp_path / "index.json"
    run_script([str(ROOT / "benchmarks/indexing.py"), "--corpus",
                str(smoke_data / "2wikimultihopqa" / "smoke" / "corpus.jsonl"), "--embedder", "fake", "--probe", "0",
                "--limit", "40", "--noun-chunks", "--batch-size", "8", "--json", str(out)], cwd=tmp_path)
    rec = json.loads(out.read_text())
    config = rec["provenance"]["config"]
    assert rec["passages"] == 40 and rec["stats"]["atoms"] > 0
    assert config["atomizer"]["noun_chunks"] is True and config["atomizer"]["vocab_llm_filter"] is False
    assert config["embedder"]["batch_size"] == 8

