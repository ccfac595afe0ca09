"""The benchmark scripts whose figures the README and experiments quote run end to end.

They import the library's internals, so a change of an internal return type breaks them without
breaking any library test (``BatchRetriever.run`` returning a ``RetrievalResult`` broke
``benchmarks/graphbench.py`` that way). Each script runs here on a few questions with the fake
embedder (and the fake LLM), in a subprocess as a user runs it; the figures are not checked, the
shape of what the script writes and its resume behaviour are.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_script(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATOMICRAG_NO_PROGRESS": "1"}
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{args[0]} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


NOVELS = {
    "Novel-A": ("The lighthouse keeper Tomas Brandt lived on Gull Island with his daughter Mira. "
                "Every winter the supply boat from Harwick brought oil and flour. "
                "Mira learned to read the weather from the colour of the sea. "
                "One night a schooner called the Grey Heron struck the northern reef. "
                "Tomas rowed out alone and saved four sailors from the wreck. ") * 6,
    "Novel-B": ("Colonel Ashby commanded the garrison at Fort Redwater during the dry summer. "
                "His adjutant, Lieutenant Okafor, kept the supply ledgers in a locked chest. "
                "The river ran so low that the ferry stopped in July. "
                "A courier arrived from the capital with orders sealed in green wax. "
                "Okafor discovered that two wagons of rifles were missing from the ledger. ") * 6,
}
QUESTIONS = [
    ("Novel-A", "Who did Tomas save from the wreck?", "Tomas rowed out alone and saved four sailors from the wreck."),
    ("Novel-A", "What did the supply boat bring?", "Every winter the supply boat from Harwick brought oil and flour."),
    ("Novel-A", "Which ship struck the reef?", "A schooner called the Grey Heron struck the northern reef."),
    ("Novel-A", "How did Mira read the weather?", "Mira learned to read the weather from the colour of the sea."),
    ("Novel-B", "Who kept the supply ledgers?", "Lieutenant Okafor kept the supply ledgers in a locked chest."),
    ("Novel-B", "What was missing from the ledger?", "Okafor discovered that two wagons of rifles were missing."),
    ("Novel-B", "Why did the ferry stop?", "The river ran so low that the ferry stopped in July."),
    ("Novel-B", "How were the orders sealed?", "A courier arrived with orders sealed in green wax."),
]


def graphbench_tree(root: Path) -> Path:
    docs = [{"id": k, "title": k, "text": v, "corpus": k} for k, v in NOVELS.items()]
    write_jsonl(root / "graphbench_novel" / "corpus_raw.jsonl", docs)
    write_jsonl(root / "graphbench_novel" / "corpus.jsonl", docs)
    write_jsonl(root / "graphbench_novel" / "questions.dev.jsonl", [
        {"id": f"q{i}", "question": q, "answers": [ev], "question_type": "Fact Retrieval", "supporting_ids": [],
         "evidence": ev, "corpus": corpus} for i, (corpus, q, ev) in enumerate(QUESTIONS)])
    return root


@pytest.mark.slow
def test_bench_graphbench_writes_every_system_row(tmp_path: Path) -> None:
    data = graphbench_tree(tmp_path / "data")
    out = tmp_path / "novel.json"
    run_script([str(ROOT / "benchmarks/graphbench.py"), "--dataset", "graphbench_novel", "--embedder", "fake",
                "--data-dir", str(data), "--cache-dir", str(tmp_path / "cache"), "--json", str(out),
                "--set", "reader.atoms_first=false"], cwd=tmp_path)
    rows = {r["system"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"hybrid", "ppr_minilm", "dense atoms", "ppr (paper values)",
                         "hybrid, atom-list context (25 atoms)", "BM25 200-word windows",
                         "dense MiniLM 200-word windows"}
    for r in rows.values():
        assert r["n"] == len(QUESTIONS) // 2  # the odd half, both novels' questions
        assert 0.0 <= r["cov@300"] <= r["cov@600"] <= 100.0
        assert r["words_mean"] > 0
    # each novel is a 150-word document: a 200-word window holds all of it, so BM25 covers everything
    assert rows["BM25 200-word windows"]["cov@300"] == 100.0
    diff, (lo, hi) = rows["hybrid"]["vs_baseline@600"]  # paired with BM25 windows, question by question
    assert diff == round(rows["hybrid"]["cov@600"] - 100.0, 1) and lo <= diff <= hi
    assert not any(k.startswith("_") for r in rows.values() for k in r)
    # the per-question values stay, so the record's summary re-derives from them
    assert len(rows["hybrid"]["per_question@600"]) == len(json.loads(out.read_text())["question_ids"])
    # the record says how it was made: the command, the composed config, the data files read
    prov = json.loads(out.read_text())["provenance"]
    assert "benchmarks/graphbench.py" in prov["command"] and "--dataset graphbench_novel" in prov["command"]
    assert prov["config"]["reader"]["atoms_first"] is False  # --set reached the composed config
    assert prov["config"]["embedder"]["name"] == "fake" and prov["config"]["dataset"]["name"] == "graphbench_novel"
    hashed = {Path(p).name for p in prov["data_files"]}
    assert {"corpus_raw.jsonl", "questions.dev.jsonl"} <= hashed
    assert prov["started_at"] <= prov["finished_at"] and prov["machine"]["cores"] >= 1


@pytest.mark.slow
def test_bench_qa_answers_every_system_and_resumes(tmp_path: Path, smoke_data: Path) -> None:
    out = tmp_path / "qa"
    args = [str(ROOT / "benchmarks/qa.py"), "--split", "smoke", "--n", "6", "--block", "4", "--llm", "fake",
            "--embedder", "fake", "--data-dir", str(smoke_data), "--cache-dir", str(tmp_path / "cache"),
            "--systems", "atomicrag,vanilla,gold,atomicrag_atoms,atomicrag_top5", "--out", str(out)]
    proc = run_script(args, cwd=tmp_path)
    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert len(rows) == 6 * 5
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 6
    assert set(summary["systems"]) == {"atomicrag", "vanilla", "gold", "atomicrag_atoms", "atomicrag_top5"}
    for name, m in summary["systems"].items():
        assert m["failed"] == 0, name
        assert m["context_tokens_mean"] <= 600  # one budget for every system
        lo, hi = m["F1_ci95"]
        assert lo <= m["F1"] <= hi
    assert "F1_minus_vanilla" in summary["systems"]["atomicrag"]
    assert summary["systems"]["gold"]["R@5"] is None and summary["systems"]["vanilla"]["R@5"] is not None
    assert "vanilla" in proc.stdout and "atomicrag" in proc.stdout
    # every answer row names the model and the budgets it was answered under
    assert {(r["model"], r["max_tokens"], r["context_budget"]) for r in rows} == {(rows[0]["model"], 384, 600)}
    # the summary's flags are the answering run's, with its provenance
    assert summary["flags_from"] == "runs.json" and summary["llm"] == "fake" and summary["half"] == "odd"
    assert len(summary["runs"]) == 1 and summary["runs"][0]["provenance"]["models"]["llm"]["name"] == "fake"
    # a second run finds every row done: nothing is answered twice
    run_script(args, cwd=tmp_path)
    assert len((out / "answers.jsonl").read_text().splitlines()) == 6 * 5
    # a summary call with other flags reports the flags the answers were made with, not its own
    run_script([*args, "--summary-only", "--max-tokens", "7", "--context-tokens", "9"], cwd=tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["max_tokens"], summary["context_tokens"]) == (384, 600)
    assert "--summary-only" in summary["command"] and len(summary["runs"]) == 2


@pytest.mark.slow
def test_bench_qa_even_half_answers_other_questions(tmp_path: Path, smoke_data: Path) -> None:
    """``--half even`` answers the tuning half: none of its questions is one of the odd half's."""
    common = [str(ROOT / "benchmarks/qa.py"), "--split", "smoke", "--n", "3", "--llm", "fake",
              "--embedder", "fake", "--data-dir", str(smoke_data), "--cache-dir", str(tmp_path / "cache"),
              "--systems", "vanilla,gold"]
    ids = {}
    for half in ("odd", "even"):
        run_script([*common, "--half", half, "--out", str(tmp_path / half)], cwd=tmp_path)
        ids[half] = {json.loads(x)["id"] for x in (tmp_path / half / "answers.jsonl").read_text().splitlines()}
        assert json.loads((tmp_path / half / "summary.json").read_text())["half"] == half
    assert len(ids["odd"]) == len(ids["even"]) == 3 and not ids["odd"] & ids["even"]


def test_bench_batch_size_compares_each_size_with_the_configs_own(tmp_path: Path, smoke_data: Path) -> None:
    proc = run_script([str(ROOT / "benchmarks/batch_size.py"), "--embedders", "fake", "--batch-sizes", "8", "16",
                       "--batch-tokens", "512", "--corpus", str(smoke_data / "2wikimultihopqa" / "smoke" / "corpus.jsonl"),
                       "--sentences", "50", "--repeats", "1"], cwd=tmp_path)
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("fake ")]
    ways = [("batch", "64"), ("batch", "8"), ("batch", "16"), ("tokens", "512")]  # the config's own first
    assert [(r[1], r[2], r[3]) for r in rows] == [(k, *w) for k in ("titles", "sentences") for w in ways]
    assert all(r[4] == "(config)" and r[7] == "x1.00" for r in rows if r[2:4] == ["batch", "64"])
