"""benchmarks/server_burst.py and benchmarks/server_overhead.py run end to end at a small size, in a
subprocess as a user runs them, and their records hold what the docs quote: each burst's outcomes
(200 or 503 only, one per client) and the server's limits; both medians and their difference."""
from __future__ import annotations

import json
from pathlib import Path

from tests.scripts.test_benchmark_scripts import ROOT, run_script


def test_bench_server_burst_counts_every_client(tmp_path: Path) -> None:
    out = tmp_path / "burst.json"
    run_script([str(ROOT / "benchmarks/server_burst.py"), "--clients", "30", "--idle", "0", "--out", str(out)],
               tmp_path)
    record = json.loads(out.read_text())
    outcomes = record["bursts"]["30"]["outcomes"]
    assert set(outcomes) <= {"200", "503"} and sum(outcomes.values()) == 30, outcomes
    assert record["server"]["max_connections"] >= 30 and record["server"]["backlog"] >= 128
    assert record["commit"] and record["command"].endswith(f"--out {out}")


def test_bench_server_overhead_times_both_ways(tmp_path: Path) -> None:
    out = tmp_path / "overhead.json"
    run_script([str(ROOT / "benchmarks/server_overhead.py"), "--n", "20", "--out", str(out)], tmp_path)
    record = json.loads(out.read_text())
    samples = record["samples_ms"]
    assert len(samples["direct_search"]) == len(samples["http_search"]) == 20
    p50 = record["p50_ms"]
    assert abs(p50["server_cost"] - (p50["http_search"] - p50["direct_search"])) < 0.002 and p50["direct_search"] > 0
