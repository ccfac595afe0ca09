"""The records the docs cite exist and say how they were made.

Figures in tables are not typed: they are rendered from their records (``python scripts/make_tables.py
--docs``, checked by ``test_docs_tables.py``). What is left to check is what a reader follows: every
``results/...`` path a document cites exists, and every cited or rendered record carries its
provenance: the command and the commit, and for a run recorded by ``harness/provenance.py`` also
its composed config, its models and its data files' hashes.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from atomicrag.harness.report_tables.docs_tables import doc_files, load_specs, records_of

ROOT = Path(__file__).resolve().parents[2]
RECORD_SUFFIXES = (".json", ".jsonl", ".txt", ".md", ".csv")
REF = re.compile(r"(?<![\w/.])results/[A-Za-z0-9_./{},@=+*<>-]+")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)  # commands: the paths they write are outputs, not citations
FULL = ("command", "config", "models", "data_files")
# Cited records made before the project's record format (their header says the command and the
# commit in prose, or, for the first search rounds, nothing): each leaves this list when it is made
# again with its command; nothing joins it, and the test fails while a listed one is fine or uncited.
WITHOUT_PROVENANCE = frozenset({
    "results/setup/setup_env_2026-12-04.txt", "results/install/test_install_2026-12-04.txt",
    "results/data_get/rebuild_check.json", *(f"results/retrieval_2wiki/tune/round{i}_half0.json" for i in range(1, 5)),
})  # what harness/provenance.py writes, beside git.commit


def expand(ref: str) -> list[str]:
    """``run{1,2,3}.txt`` → the three names it abbreviates."""
    m = re.search(r"\{([^{}]*)\}", ref)
    if not m:
        return [ref]
    return [x for alt in m.group(1).split(",") for x in expand(ref[:m.start()] + alt + ref[m.end():])]


def cited(text: str) -> list[str]:
    """The ``results/...`` record files a text's prose names (a trailing full stop or comma is prose,
    not the path; a pattern such as ``speed_*.txt`` names no one file)."""
    return [p for m in REF.finditer(FENCE.sub("", text)) for p in expand(m.group(0).rstrip(".,"))
            if p.endswith(RECORD_SUFFIXES) and not any(c in p for c in "*<>")]


def says_provenance(prov: Any) -> bool:
    """A ``harness/provenance.py`` record: command, commit, config, models and data hashes."""
    return isinstance(prov, dict) and bool((prov.get("git") or {}).get("commit")) and all(k in prov for k in FULL) \
        and bool(prov["command"])


def says_how_it_was_made(path: Path) -> bool:
    """Whether a record names how it was made: a JSON record's full ``provenance`` (or, for a
    summary or a report made by a script, its own or its ``meta``'s command and commit, and the
    provenance of every run it lists), per-question rows by the run record beside them, a
    make_tables table by every run it lists, a printed report by the header
    ``scripts/record_output.sh`` writes."""
    if path.suffix == ".jsonl":
        beside = [path.parent / n for n in ("runs.json", "metrics.json") if (path.parent / n).is_file()]
        return bool(beside) and all(says_how_it_was_made(b) for b in beside)
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        if isinstance(data, list):  # bench_qa's runs.json: one entry per answering run
            return bool(data) and all(isinstance(r, dict) and says_provenance(r.get("provenance")) for r in data)
        if says_provenance(data.get("provenance")):
            return True
        runs = data.get("runs") if isinstance(data.get("runs"), list) else []
        return any(isinstance(d, dict) and d.get("command") and d.get("commit") for d in (data, data.get("meta"))) \
            and all(says_provenance(r.get("provenance")) for r in runs if isinstance(r, dict))
    text = path.read_text(errors="replace")
    if path.suffix == ".md" and "\n## Runs used\n" in text:
        runs = re.findall(r"^- .*?: `([^`]+)` — ", text.split("\n## Runs used\n")[1], flags=re.M)
        return bool(runs) and all(says_how_it_was_made(path.parent / r / "metrics.json") for r in runs)
    head = text.splitlines()[:8]
    return any(h.startswith("# command:") for h in head) and any(h.startswith("# commit:") for h in head)


def records() -> dict[Path, set[str]]:
    """Every record file the docs cite or render → where."""
    out: dict[Path, set[str]] = {}
    for doc in doc_files():
        if doc.is_file():
            for ref in cited(doc.read_text()):
                p = ROOT / ref
                if p.is_file() and p.name != "README.md":
                    out.setdefault(p, set()).add(str(doc.relative_to(ROOT)))
    for name, spec in load_specs().items():
        for r in records_of(spec):
            out.setdefault(ROOT / r, set()).add(f"docs/tables.yaml:{name}")
    return out


def test_every_cited_results_path_exists() -> None:
    missing = sorted({(str(d.relative_to(ROOT)), ref) for d in doc_files() if d.is_file() for ref in cited(d.read_text())
                      if not (ROOT / ref).exists()})
    assert not missing, f"documents cite results/ paths that are not in the repository: {missing}"


def test_every_cited_record_says_how_it_was_made() -> None:
    found = records()
    assert len(found) > 50  # the docs cite their records
    unmade = {str(r.relative_to(ROOT)): sorted(w) for r, w in found.items() if not says_how_it_was_made(r)}
    new = {r: w for r, w in unmade.items() if r not in WITHOUT_PROVENANCE}
    assert not new, f"records the docs cite or render name no command and commit (or lack provenance): {new}"
    stale = sorted(WITHOUT_PROVENANCE - set(unmade))
    assert not stale, f"now made with provenance, or no longer cited: drop them from WITHOUT_PROVENANCE: {stale}"


def test_a_record_says_how_it_was_made(tmp_path: Path) -> None:
    prov = {"command": "python x.py", "git": {"commit": "abc"}, "config": {}, "models": {}, "data_files": {}}
    made, bare, half = tmp_path / "m.json", tmp_path / "r.json", tmp_path / "h.json"
    made.write_text(json.dumps({"rows": [1.5], "provenance": prov}))
    bare.write_text(json.dumps({"rows": [1.5]}))
    half.write_text(json.dumps({"provenance": {"command": "python x.py", "git": {"commit": "abc"}}}))
    assert says_how_it_was_made(made) and not says_how_it_was_made(bare) and not says_how_it_was_made(half)
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"command": "bench_qa.py --summary-only", "commit": "abc", "runs": [{"provenance": prov}]}))
    assert says_how_it_was_made(summary)
    summary.write_text(json.dumps({"command": "bench_qa.py --summary-only", "commit": "abc", "runs": [{"flags": {}}]}))
    assert not says_how_it_was_made(summary)  # one answering run without its provenance
    text = tmp_path / "t.txt"
    text.write_text("# command: python x.py\n# commit: abc\n1.5\n")
    assert says_how_it_was_made(text)
    text.write_text("1.5\n")
    assert not says_how_it_was_made(text)
    (tmp_path / "runs.json").write_text(json.dumps([{"provenance": prov}]))
    rows = tmp_path / "answers.jsonl"
    rows.write_text("{}\n")
    assert says_how_it_was_made(rows)


def test_citations_are_read_as_paths() -> None:
    assert cited("see `results/b/run{1,2}.txt`, and results/x/summary.json. results/b/, results/b/*.txt") == [
        "results/b/run1.txt", "results/b/run2.txt", "results/x/summary.json"]
    assert cited("```\npython x.py --out results/b/new.json\n```\n") == []
