"""The docs' tables of figures are rendered from their records (``python scripts/make_tables.py --docs``)."""
from __future__ import annotations

import json
from pathlib import Path

from atomicrag.harness.report_tables import docs_tables
from atomicrag.harness.report_tables.docs_tables import load_specs, records_of, render, render_docs


def test_every_rendered_block_is_up_to_date() -> None:
    counts, stale = render_docs(check=True)
    assert sum(counts.values()) > 0
    assert not stale, "stale tables; run python scripts/make_tables.py --docs: " + ", ".join(
        f"{s.doc.relative_to(docs_tables.ROOT)}:{s.name} ({s.reason})" for s in stale)


def test_every_spec_is_used_and_its_records_exist() -> None:
    specs = load_specs()
    used = {m.group(2) for doc in docs_tables.doc_files() if doc.is_file()
            for m in docs_tables.BLOCK.finditer(doc.read_text())}
    assert set(specs) <= used, f"specs no document renders: {sorted(set(specs) - used)}"
    missing = [r for s in specs.values() for r in records_of(s) if not (docs_tables.ROOT / r).is_file()]
    assert not missing


def _doc(tmp_path: Path, body: str) -> tuple[Path, dict]:
    (tmp_path / "r.json").write_text(json.dumps({"s": {"F1": 60.46, "F1_ci95": [55.0, 65.91], "d": -3.04},
                                                 "pair": [4.1, [-0.4, 8.7], 333], "x": None}))
    (tmp_path / "out.txt").write_text("# command: x\ndataset: a\n| a |\n|---|\n| 1.5 |\nrest\n")
    spec = {"t": {"record": "r.json", "header": ["sys", "F1", "d", "n"],
                  "rows": [["a", "{s.F1:ci}", "{s.d:+.1f}", "{pair:n}"], ["b", "{pair:+pair}", "{x:.1f}", "x"]]},
            "e": {"excerpt": {"record": "out.txt", "from": "^dataset:"}, "fence": True}}
    doc = tmp_path / "README.md"
    doc.write_text(body)
    return doc, spec


def test_a_block_is_rendered_from_its_record_and_a_changed_figure_is_stale(tmp_path: Path) -> None:
    doc, specs = _doc(tmp_path, "Intro.\n\n<!-- table: t -->\n<!-- /table -->\n\n<!-- table: e -->\n<!-- /table -->\n")
    counts, stale = render_docs(check=True, root=tmp_path, specs=specs, docs=[doc])
    assert counts == {doc: 2} and [s.name for s in stale] == ["t", "e"]
    render_docs(root=tmp_path, specs=specs, docs=[doc])
    text = doc.read_text()
    assert "| a | 60.5 [55.0, 65.9] | −3.0 | 333 |" in text and "| b | +4.1 [−0.4, 8.7] | — | x |" in text
    assert "```\ndataset: a\n| a |\n|---|\n| 1.5 |\n```\n" in text and "rest" not in text
    assert render_docs(check=True, root=tmp_path, specs=specs, docs=[doc])[1] == []
    # the slips a review made by hand: another value of the same record, a sign, a digit
    for good, slip in (("60.5 [55.0", "60.4 [55.0"), ("−3.0", "+3.0"), ("| 1.5 |", "| 1.50 |")):
        doc.write_text(text.replace(good, slip))
        assert [s.reason for s in render_docs(check=True, root=tmp_path, specs=specs, docs=[doc])[1]] == ["stale"]
    doc.write_text(text.replace("table: t", "table: nosuch"))
    assert render_docs(check=True, root=tmp_path, specs=specs, docs=[doc])[1][0].reason.startswith("no such spec")


def test_render_reads_dotted_keys_and_list_indices(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"rows": [{"R@5": 94.04, "a.b": 1234}]}))
    spec = {"record": "r.json", "header": ["R@5", "n"], "align": "ll", "rows": [["{rows.0.R@5:.1f}", "{rows.0.a.b:,d}"]]}
    assert render(spec, tmp_path) == "| R@5 | n |\n|---|---|\n| 94.0 | 1,234 |\n"


def test_render_reads_printed_fields_per_row_records_and_sums(tmp_path: Path) -> None:
    for name, ms in (("a", 2.208), ("b", 46.584)):
        (tmp_path / f"{name}.txt").write_text(f"# command: x\nscale  igraph  topk\n{name}big  90.2  {ms}\n")
        (tmp_path / f"{name}.json").write_text(json.dumps({"req": {"ner": {"eq": 3}, "qa": {"eq": 4}}, "tok": 46825967}))
    spec = {"header": ["run", "ms/q", "equal", "tokens"], "row_record": "$0.txt", "rows": [["a"], ["b"]],
            "cells": ["$0", "{~^$0big~2}", "x", "y"]}
    assert render(spec, tmp_path).splitlines()[2:] == ["| a | 2.208 | x | y |", "| b | 46.584 | x | y |"]
    spec = {"header": ["equal", "tokens"], "record": "a.json", "rows": [["{req.*.eq}", "{tok:M.1f}"]]}
    assert render(spec, tmp_path).splitlines()[2] == "| 7 | 46.8M |"
    assert records_of({"row_record": "$0.txt", "rows": [["a"], ["b"]], "cells": []}) == ["a.txt", "b.txt"]
