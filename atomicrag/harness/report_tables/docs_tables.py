"""Tables of figures in the docs, rendered from their records between marker comments.

A document holds a block such as::

    <!-- table: readme_qa -->
    (rendered lines)
    <!-- /table -->

and ``docs/tables.yaml`` says how the block named ``readme_qa`` is made from which record(s).
``python scripts/make_tables.py --docs`` rewrites every block; ``--check`` rewrites nothing and
lists the stale ones (a test runs it). A spec is one of:

``rows`` — a Markdown table::

    readme_qa:
      record: results/qa_2wiki/odd333_reader_size/summary.json   # or records: {alias: path, ...}
      header: [system, EM, F1]
      align: lrr                                  # optional; default: first column left, the rest right
      rows:
        - [vanilla, "{systems.vanilla.EM:ci}", "{systems.vanilla.F1:.1f}"]
        - {record: other.json, cells: [...]}      # a row from another record

  or, for rows alike, ``cells`` templates whose ``$0``, ``$1``, … each row fills::

      cells: ["$0", "{$1.cov@300:ci}", "{$1.words_mean:.0f}"]
      rows: [["`hybrid`", rows.0], ["BM25 windows", rows.5]]

  ``row_record: results/plans/$1.json`` gives each such row its own record.
  ``rows_from: results`` (with ``cells``) makes one row per item of that list, ``$0`` its path
  (``results.0``, ``results.1``, …): a whole search, as the record holds it.

  A ``{path:format}`` placeholder reads the record (dotted keys, list indices as numbers; with
  ``records:`` the first key is the alias). Formats: any Python format spec (``.1f``, ``+.1f``,
  ``,d``; ``M.1f`` for millions, ``46.8M``); ``ci`` / ``+ci``: the value and its ``<key>_ci95`` sibling, ``22.8 [18.3, 27.3]``;
  ``pair`` / ``+pair``: a ``[d, [lo, hi](, n)]`` entry, ``+4.1 [−0.4, 8.7]``; ``n``: that entry's
  n; a trailing ``?`` prints — where the record has no such entry. Negative numbers print with a
  true minus; a null value prints —. ``a.*.b`` sums ``b`` over every key of ``a``. In a text record ``{~REGEX~N}`` is field N (0-based,
  split on whitespace) of the first line matching REGEX, as printed.

``excerpt`` — lines copied from a text record (a command's printed report)::

    quickstart_printed:
      excerpt: {record: results/quickstart/make_run_20261204.txt, from: "^dataset:", keep: "^\\\\|"}
      fence: true                                 # inside a ``` code block

  the first line matching ``from`` and the lines right after it that match ``keep``; with
  ``records: [...]`` each record's in turn, the first ``header_lines`` left out after the first.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from atomicrag.harness.report_tables.render import MISSING, fmt, fmt_diff

ROOT = Path(__file__).resolve().parents[3]
SPECS = ROOT / "docs" / "tables.yaml"
COMMAND = "python scripts/make_tables.py --docs"
BLOCK = re.compile(r"(<!-- table: ([\w.-]+) -->\n)(.*?)(<!-- /table -->)", re.DOTALL)
FIELD = re.compile(r"\{~(.+?)~(\d+)\}")  # {~REGEX~N}: field N of a text record's first line matching REGEX
PLACEHOLDER = re.compile(r"\{([^{}]+?)(?::([^{}:]*))?\}")  # {path:format}; a path may hold ':'


def doc_files(root: Path = ROOT) -> list[Path]:
    """The documents whose tables are rendered: README, docs/, experiments/ and results/ READMEs."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md")),
            *sorted(root.glob("experiments/**/README.md")), *sorted(root.glob("results/**/README.md"))]


@dataclass
class Stale:
    doc: Path
    name: str
    reason: str


def load_specs(path: Path = SPECS) -> dict[str, dict[str, Any]]:
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _record(path: str, root: Path, cache: dict[Path, Any]) -> Any:
    p = root / path
    if p not in cache:
        cache[p] = json.loads(p.read_text()) if p.suffix == ".json" else p.read_text()
    return cache[p]


def lookup(data: Any, dotted: str) -> Any:
    """``a.b.0.R@5`` in ``data``; a key may itself hold dots (the longest match wins)."""
    parts = dotted.split(".")
    while parts:
        if isinstance(data, list):
            data, parts = data[int(parts[0])], parts[1:]
            continue
        for k in range(len(parts), 0, -1):
            key = ".".join(parts[:k])
            if isinstance(data, dict) and key in data:
                data, parts = data[key], parts[k:]
                break
        else:
            raise KeyError(dotted)
    return data


def _interval(est: Any, ci: Any, signed: bool) -> str:
    if est is None:
        return MISSING
    head = fmt_diff(est, ".1f") if signed else fmt(est, ".1f")
    return f"{head} [{fmt(ci[0], '.1f')}, {fmt(ci[1], '.1f')}]"


def format_value(data: Any, dotted: str, spec: str) -> str:
    if spec.endswith("?"):  # optional: — where the record has no such entry
        try:
            return format_value(data, dotted, spec[:-1])
        except (KeyError, IndexError):
            return MISSING
    if spec in ("ci", "+ci"):
        parent, _, key = dotted.rpartition(".")
        node = lookup(data, parent) if parent else data
        return _interval(node.get(key), node.get(f"{key}_ci95"), spec.startswith("+"))
    if ".*." in dotted:  # the sum over every key at that level: requests.*.equal
        head, _, rest = dotted.partition(".*.")
        value = sum(lookup(v, rest) for v in lookup(data, head).values())
    else:
        value = lookup(data, dotted)
    if spec in ("pair", "+pair"):
        return _interval(value[0], value[1], spec.startswith("+"))
    if spec == "n":
        return str(value[2])
    if value is None:
        return MISSING
    if isinstance(value, str) or not spec:
        return str(value)
    if spec.startswith("M"):  # millions: 46825967 with M.1f -> 46.8M
        return fmt(value / 1e6, spec[1:]) + "M"
    if spec.startswith("+"):
        return fmt_diff(value, spec[1:])
    return fmt(value, spec)


def field(text: str, pattern: str, n: int) -> str:
    """Field ``n`` (0-based, split on whitespace) of the first line of ``text`` that matches ``pattern``."""
    line = next(line for line in text.splitlines() if re.search(pattern, line))
    return line.split()[n]


def fill(template: str, spec: dict[str, Any], record: str | None, root: Path, cache: dict[Path, Any]) -> str:
    if record is not None and FIELD.search(str(template)):
        text = str(_record(record, root, cache))
        return FIELD.sub(lambda m: field(text, m.group(1), int(m.group(2))), str(template))

    def one(m: re.Match[str]) -> str:
        dotted, form = m.group(1), m.group(2) or ""
        if record is not None:
            return format_value(_record(record, root, cache), dotted, form)
        alias, _, rest = dotted.partition(".")
        return format_value(_record(spec["records"][alias], root, cache), rest, form)
    return PLACEHOLDER.sub(one, str(template))


def records_of(spec: dict[str, Any]) -> list[str]:
    """Every record path a spec reads."""
    out = [spec["record"]] if "record" in spec else list((spec.get("records") or {}).values())
    out += [r["record"] for r in spec.get("rows", []) if isinstance(r, dict) and "record" in r]
    out += [_substitute(spec["row_record"], r) for r in spec.get("rows", []) if "row_record" in spec]
    if "excerpt" in spec:
        out += spec["excerpt"].get("records") or [spec["excerpt"]["record"]]
    return list(dict.fromkeys(out))


def _substitute(template: str, args: list[Any]) -> str:
    for i in reversed(range(len(args))):
        template = template.replace(f"${i}", str(args[i]))
    return template


def render(spec: dict[str, Any], root: Path = ROOT, cache: dict[Path, Any] | None = None) -> str:
    """The block's lines (without the markers)."""
    cache = {} if cache is None else cache
    if "excerpt" in spec:
        ex = spec["excerpt"]
        body: list[str] = []
        for n, record in enumerate(ex.get("records") or [ex["record"]]):
            lines = str(_record(record, root, cache)).splitlines()
            start = next(i for i, line in enumerate(lines) if re.search(ex["from"], line))
            end = start + 1
            while end < len(lines) and re.search(ex.get("keep", "^\\|"), lines[end]):
                end += 1
            body += lines[start + (ex.get("header_lines", 0) if n else 0):end]
        return "\n".join(["```", *body, "```"] if spec.get("fence") else body) + "\n"
    header = spec["header"]
    align = spec.get("align") or "l" + "r" * (len(header) - 1)
    out = ["| " + " | ".join(fill(h, spec, spec.get("record"), root, cache) for h in header) + " |",
           "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    rows = spec.get("rows") or [[f"{spec['rows_from']}.{i}"] for i in range(len(
        lookup(_record(spec["record"], root, cache), spec["rows_from"])))]
    for row in rows:
        cells, record = (row["cells"], row["record"]) if isinstance(row, dict) else (row, spec.get("record"))
        if "cells" in spec and not isinstance(row, dict):
            cells = [_substitute(t, row) for t in spec["cells"]]
            if "row_record" in spec:  # each row's own record, e.g. "results/plans/$1.json"
                record = _substitute(spec["row_record"], row)
        out.append("| " + " | ".join(fill(c, spec, record, root, cache) for c in cells) + " |")
    return "\n".join(out) + "\n"


def render_docs(check: bool = False, root: Path = ROOT, specs: dict[str, dict[str, Any]] | None = None,
                docs: list[Path] | None = None) -> tuple[dict[Path, int], list[Stale]]:
    """Rewrite every block (or, with ``check``, only compare). Returns the blocks per document and
    the stale (or unknown) ones."""
    specs = load_specs(root / "docs" / "tables.yaml") if specs is None else specs
    cache: dict[Path, Any] = {}
    counts: dict[Path, int] = {}
    stale: list[Stale] = []
    for doc in docs if docs is not None else doc_files(root):
        if not doc.is_file():
            continue
        text = doc.read_text(encoding="utf-8")

        def one(m: re.Match[str], doc: Path = doc) -> str:
            name = m.group(2)
            counts[doc] = counts.get(doc, 0) + 1
            if name not in specs:
                stale.append(Stale(doc, name, "no such spec in docs/tables.yaml"))
                return m.group(0)
            try:
                body = render(specs[name], root, cache)
            except (KeyError, IndexError, TypeError, StopIteration, FileNotFoundError) as exc:
                stale.append(Stale(doc, name, f"cannot render: {type(exc).__name__} {exc}"))
                return m.group(0)
            if body != m.group(3):
                stale.append(Stale(doc, name, "stale"))
            return m.group(1) + body + m.group(4)

        new = BLOCK.sub(one, text)
        if not check and new != text:
            doc.write_text(new, encoding="utf-8")
    return counts, stale


def main(check: bool = False) -> int:
    counts, stale = render_docs(check=check)
    for doc, n in counts.items():
        print(f"{doc.relative_to(ROOT)}: {n} table(s)")
    for s in stale:
        print(f"{s.doc.relative_to(ROOT)}: table {s.name}: {s.reason}")
    if check and stale:
        print(f"{len(stale)} stale block(s): run {COMMAND}")
        return 1
    return 1 if any(s.reason != "stale" for s in stale) else 0
