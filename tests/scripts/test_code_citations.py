"""Every ``results/...`` record the package's code cites (in a comment, a docstring or a string)
exists in the checkout: a constant's source must be a record a reader can open, not a run folder
that was never committed or has been replaced. ``tests/scripts/test_doc_records.py`` checks the
documents the same way."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REF = re.compile(r"(?<![\w/.])results/[A-Za-z0-9_./{},@=+*<>$-]*")
PLACEHOLDER = re.compile(r"[*<>${}]")  # a pattern or a template (results/<experiment>/...) names no one path


def cited(source: str) -> set[str]:
    """The ``results/...`` paths a module's text names, and its string constants that start with
    one (a path split over implicit string concatenation is whole there). A trailing full stop or
    comma is prose; ``...`` abbreviating a folder is a path that does not exist."""
    refs = {m.group(0) for m in REF.finditer(source)}
    refs |= {n.value.split()[0] for n in ast.walk(ast.parse(source))
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("results/")}
    return {r.rstrip(",:;") if r.endswith("...") else r.rstrip(".,:;") for r in refs if not PLACEHOLDER.search(r)}


def test_every_results_path_cited_in_the_package_exists() -> None:
    missing = sorted((str(p.relative_to(ROOT)), ref) for p in sorted((ROOT / "atomicrag").rglob("*.py"))
                     for ref in cited(p.read_text(encoding="utf-8")) if not (ROOT / ref).exists())
    assert not missing, missing


def test_citations_are_read_whole() -> None:
    src = ('"""See results/plans/x.json."""\n'
           'R = ("results/a/"\n     "b")  # and results/c/.../d, results/<experiment>/metrics.json\n')
    assert cited(src) == {"results/plans/x.json", "results/a/", "results/a/b", "results/c/.../d"}
