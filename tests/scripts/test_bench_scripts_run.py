"""The benchmark scripts that had no test run end to end at a small size, in a subprocess as a user
runs them, and each still checks what its figures rest on.

A benchmark that rots is found only when someone re-makes a record with it; each of these imports
library internals (``PPR``, ``graph.stats.triangles``, ``AtomicRAG``'s index state), so a change
there can break the script without breaking a library test. The figures themselves are not checked
(they are timings); what each script asserts before it prints a ratio is: triangle counts equal,
the batched PPR's top-25 sets equal igraph's, an exact solve equal on both paths, titles read from
the first line of a text file.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from atomicrag.core.artifacts import read_jsonl
from atomicrag.data.ingest import looks_like_title
from tests.scripts.test_benchmark_scripts import ROOT, run_script


def test_bench_graph_stats_counts_agree_with_the_baseline(tmp_path: Path) -> None:
    # the script exits non-zero when the ordered count and (A @ A) * A differ at any node
    out = run_script([str(ROOT / "benchmarks/triangles.py"), "--scales", "medium"], tmp_path).stdout
    row = next(line for line in out.splitlines() if line.startswith("medium"))
    nodes, edges = (int(x.replace(",", "")) for x in row.split()[1:3])
    assert nodes > 10_000 and edges > nodes, row  # a Graph-Bench-Medical-sized graph was counted
    assert row.rstrip().endswith("x"), row


@pytest.mark.slow
def test_bench_retrieval_agrees_with_igraph_at_the_medical_scale(tmp_path: Path) -> None:
    pytest.importorskip("igraph")
    out = run_script([str(ROOT / "benchmarks/retrieval.py"), "--scales", "medium", "--queries", "64",
                      "--sample", "8", "--b1", "2", "--batches", "64", "--reps", "1", "--quick",
                      "--threads", "1"], tmp_path).stdout
    last = dict(kv.split("=") for kv in out.strip().splitlines()[-1].split())
    # the ratio is only worth printing when the batched engine returns igraph's top-25 atoms
    assert float(last["top25_agreement"]) >= 0.99, out[-2000:]
    assert float(last["ratio_vs_igraph"]) > 0, out[-2000:]


def test_bench_long_documents_indexes_each_size(tmp_path: Path) -> None:
    out = run_script([str(ROOT / "benchmarks/long_documents.py"), "--mb", "0.02", "0.05"], tmp_path).stdout
    rows = re.findall(r"^\s*([\d.]+) MB .*\((\d+) chunks, (\d+) atoms, (\d+) entities\)$", out, re.M)
    assert [r[0] for r in rows] == ["0.0", "0.1"], out  # printed to one decimal: 0.02 and 0.05 MB
    (c1, a1, e1), (c2, a2, _) = (tuple(map(int, r[1:])) for r in rows)
    assert c2 > c1 and a2 > a1 > 0 and e1 > 0, out  # the larger text is cut and atomized into more
    assert "warm-up" in out


def test_bench_text_titles_reads_titles_from_the_first_line(tmp_path: Path, smoke_data: Path) -> None:
    record = tmp_path / "titles.json"
    run_script([str(ROOT / "benchmarks/text_titles.py"), "--embedder", "fake", "--split", "smoke",
                "--data-dir", str(smoke_data), "--out", str(record)], tmp_path)
    data = json.loads(record.read_text())
    rows, n = data["rows"], data["passages"]
    assert {name: r["documents"] for name, r in rows.items()} == {name: n for name in rows}
    # text_titles=true takes a file's first line as its title where the line looks like one (a
    # 2Wiki title ending like a sentence stays text); JSONL titles are all kept; text_titles=false
    # leaves every title empty
    titles = [p["title"] for p in read_jsonl(smoke_data / "2wikimultihopqa/smoke/corpus.jsonl")]
    assert len(titles) == n
    assert rows["txt_titles"]["titled_documents"] == sum(map(looks_like_title, titles)) >= n - 2
    assert rows["jsonl_titles"]["titled_documents"] == n
    assert rows["txt_no_titles"]["titled_documents"] == 0
    assert data["provenance"]["data_files"], data["provenance"]


def test_bench_device_exact_solve_runs_on_the_cpu(tmp_path: Path) -> None:
    # device_check.sh runs this on the accelerator; on the CPU it compares the CPU path with itself,
    # which still runs the script's solve, comparison and exit status
    out = run_script([str(ROOT / "benchmarks/device.py"), "exact", "--device", "cpu", "--nodes", "2000",
                      "--queries", "4", "--cpu-slice", "4"], tmp_path).stdout
    line = next(x for x in out.splitlines() if x.startswith("exact_ppr"))
    assert "top25_identical=4/4" in line and "dtype=torch.float64" in line, out


@pytest.mark.slow
@pytest.mark.pg
def test_bench_storage_round_trips_both_formats_and_finds_the_nearest_atoms(tmp_path: Path, pg_uri: str) -> None:
    # the script asserts that both stores load back the atoms and embeddings they saved
    out = run_script([str(ROOT / "benchmarks/storage.py"), "--entities", "300", "--atoms", "500", "--edges",
                      "3000", "--dim", "32", "--queries", "20", "--uri", pg_uri,
                      "--schema", "bench_storage_script"], tmp_path).stdout
    recall = float(re.search(r"recall@10 vs exact ([\d.]+)", out).group(1))
    assert recall >= 0.9, out  # HNSW on 500 atoms: the exact neighbours, or nearly
    assert re.search(r"ratios postgres/folder: save x[\d.]+, load x[\d.]+, size x[\d.]+", out), out


@pytest.mark.slow
def test_bench_embed_batching_prints_both_batchings_for_the_offline_minilm(tmp_path: Path, smoke_data: Path) -> None:
    pytest.importorskip("sentence_transformers")
    corpus = smoke_data / "2wikimultihopqa" / "smoke" / "corpus.jsonl"
    out = run_script([str(ROOT / "benchmarks/embed_batching.py"), "--encoders", "st:fp32", "--corpus", str(corpus),
                      "--limit", "48", "--repeats", "1", "--batch-size", "16"], tmp_path).stdout
    assert out.startswith("48 sentences of corpus.jsonl"), out
    row = next(line for line in out.splitlines() if line.startswith("st:fp32"))
    # fp32 texts in padded, equal-length and fixed-shape batches embed to the same vectors, up to
    # float rounding; fixed-shape batches not even that (the script fails itself when a non-fp32
    # encoder's fixed-shape batches differ at all)
    dep = re.search(r"padded ([\d.e+-]+), equal-length ([\d.e+-]+), fixed-shape ([\d.e+-]+)$", row)
    assert dep and float(dep.group(1)) < 1e-4 and float(dep.group(2)) < 1e-4 and float(dep.group(3)) == 0.0, row
