"""Figures in the README and docs trace to committed records.

Two checks a reader relies on: every record file a document cites (``results/...`` with a record
suffix) exists in the repository; and where a paragraph or table names its record(s) (a
``results/`` path or a record's file name), every one-decimal figure in it is a value of one of
those records (rounded to one decimal), so a figure typed by hand, or left over from an older run,
fails here. A table counts the records named in the paragraph just before it.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("experiments/**/README.md")),
        ROOT / "results" / "README.md"]
RECORD_SUFFIXES = (".json", ".jsonl", ".txt", ".md", ".csv")  # figures and run folders are outputs, not records
REF = re.compile(r"results/[A-Za-z0-9_./{}*<>,-]+")
FIGURE = re.compile(r"(?<![\w./+−-])([+−-]?\d+\.\d)(?![\w.%/-]|\s?[KMG]i?B\b)")  # 75.4, +10.3, −6.2; not 0.25, v1.2.3, 3.5%, 4.8 MB
RECORDS = {p.name: p for p in ROOT.glob("results/**/*.json")
           if "metrics.json" != p.name and "summary.json" != p.name}  # unique names: cited by name alone


def docs() -> list[Path]:
    return [d for d in DOCS if d.is_file()]


def leaves(obj: Any) -> Iterator[float]:
    if isinstance(obj, dict):
        for v in obj.values():
            yield from leaves(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from leaves(v)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield float(obj)


@functools.cache
def record_values(path: Path) -> frozenset[float]:
    return frozenset(round(v, 1) for v in leaves(json.loads(path.read_text())))


def cited_records(block: str) -> list[Path]:
    """Records a block names: ``results/...json`` paths, or a record's unique file name."""
    out: dict[Path, None] = {}
    for m in REF.finditer(block):
        p = ROOT / m.group(0).rstrip(".,`)")
        if p.suffix == ".json" and p.is_file():
            out[p] = None
    for name in re.findall(r"[A-Za-z0-9_.-]+\.json", block):
        if name in RECORDS:
            out[RECORDS[name]] = None
    return list(out)


def blocks(text: str) -> Iterator[tuple[str, list[Path]]]:
    """(block, records it is checked against): paragraphs, and each table row, outside code fences.
    A table row is checked against the records it names, else those of the paragraph above the table."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # commands name records they write, not figures
    previous: list[Path] = []
    for block in re.split(r"\n\s*\n", text):
        if block.lstrip().startswith("|"):
            for row in block.strip().splitlines():
                yield row, cited_records(row) or previous
            continue
        previous = cited_records(block)
        yield block, previous


@pytest.mark.parametrize("doc", docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_cited_record_file_exists(doc: Path) -> None:
    missing = []
    for m in REF.finditer(doc.read_text()):
        ref = m.group(0).rstrip(".,`)")
        if any(c in ref for c in "{*<") or not ref.endswith(RECORD_SUFFIXES):
            continue  # a pattern (results/<experiment>/...) or an output a command makes
        if not (ROOT / ref).exists():
            missing.append(ref)
    assert not missing, f"{doc.relative_to(ROOT)} cites record files that are not in the repository: {missing}"


@pytest.mark.parametrize("doc", docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_figures_next_to_a_record_are_in_that_record(doc: Path) -> None:
    bad = []
    for block, records in blocks(doc.read_text()):
        if not records:
            continue
        values = set().union(*(record_values(r) for r in records))
        for fig in FIGURE.findall(block):
            if round(float(fig.replace("−", "-")), 1) not in values:
                bad.append((fig, [r.name for r in records], block.strip()[:80]))
    assert not bad, f"{doc.relative_to(ROOT)}: figures not found in the records their paragraph names: {bad}"


def test_the_checker_catches_a_figure_its_record_does_not_hold(tmp_path: Path) -> None:
    record = next(iter(RECORDS.values()))
    text = f"The run (`{record.relative_to(ROOT)}`) scored **123.4** on everything."
    (_, records), = list(blocks(text))
    assert records == [record] and 123.4 not in set().union(record_values(record))
