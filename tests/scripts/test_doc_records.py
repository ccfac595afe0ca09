"""Figures in the README and docs trace to committed records.

Three checks a reader relies on: every record file a document cites (``results/...`` with a record
suffix) exists in the repository; every paragraph or table row with a one-decimal figure names the
record(s) it comes from (a ``results/`` path, a record's file name, or ``paper_tables.json`` for
published numbers); and every such figure is a value of one of those records (rounded to one
decimal; a signed figure such as +3.3 may be the difference of two recorded figures stated in the
same paragraph or row, as written or as the record holds them, but not off by their rounding), so
a figure typed by hand, or left over from an older run, fails here. A table counts the
records named in the paragraph just before it. A setting is not a figure: a number in a code span
(`retriever.damping=0.3`) or written as one (`= 0.3`, `≥ 0.9`, `restart 0.3`) is not checked.

A figure written with its interval, ``25.0 [20.6, 29.4]``, is held to more: the estimate and both
bounds must be one entry of one record (a value and its ``<key>_ci95`` sibling, a ``[d, [lo, hi]]``
pair, or the three printed together in a text record), so neither a slipped digit nor an interval
copied from the next row passes because a large record happens to hold the number somewhere.

Percentages are figures too: ``69%`` must be a recorded value, a recorded fraction (0.69), or a
share of two recorded numbers stated beside it (``89% (93,768 → 10,451)``); a confidence level
(``95% CI``) and a tolerance (``within 20%``, ``up to 25%``) are not.

Times are figures too, integers included: ``58 s``, ``2 min 14 s``, ``~8 min``, ``380 s`` must name
a record that holds them as times (a value under a time's key such as ``index_s``, a number the
record prints with a time unit, or the run's own duration from its start and finish) that rounds to
the number in the unit written, or in seconds converted to that unit. A setting written as a time
is named as the setting (`timeout_min: 240`); a block that calls itself an *estimate* (arithmetic
from measured figures, e.g. the GPU table of docs/scaling.md) has its times left unchecked, and says
so in the words of the block.

Counts are figures too: a number written with thousands separators (``6,119 passages``,
``972 of 22,545 atoms``), a part of a whole (``18 of the 38 attempts``) and a sample size
(``n = 333``) must be a value of a cited record, exactly; an approximate one (``~4,400``) to the
digits written. A setting written as a count says so (``1,000 resamples``, a
``1,024-token budget``, ``context 8,192``), and a dataset's size cites the listing of the files it
was counted on (``atomicrag data list``, ``results/data_get/``).

A figure whose run kept no record says so in its paragraph or row with ``no record kept``; those
are counted, and the count may only fall (``NO_RECORD_CEILING``): re-run the command and cite
its output instead.
"""
from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("experiments/**/README.md")),
        *sorted(ROOT.glob("results/**/README.md"))]
RECORD_SUFFIXES = (".json", ".jsonl", ".txt", ".md", ".csv")  # figures and run folders are outputs, not records
REF = re.compile(r"results/[A-Za-z0-9_./{}*<>,-]+")
FIGURE = re.compile(r"(?<![\w.,+−-])(?<!\D/)([+−-]?\d{1,3}(?:,\d{3})+\.\d|[+−-]?\d+\.\d)"
                    r"(?![\w%-]|\.\d|/(?!\d)|\s?[KMG]i?B\b)")  # "75.6/93.8" and "… 93.8." are figures; "a/1.5", "1.2.3" not
# 75.4, +10.3, −6.2, 5,551.9; not 0.25, v1.2.3, 3.5%, 4.8 MB
_RECORD_FILES = [p for p in ROOT.glob("results/**/*") if p.suffix in RECORD_SUFFIXES]  # one walk of results/
_NAMES = Counter(p.name for p in _RECORD_FILES)
RECORDS = {p.name: p for p in _RECORD_FILES if _NAMES[p.name] == 1}  # unique names: cited by name alone
NO_RECORD = "no record kept"
NO_RECORD_CEILING = 0  # blocks that say NO_RECORD, over all documents; lower it, never raise it
PUBLISHED = ROOT / "atomicrag" / "published" / "paper_tables.json"
RECORDS[PUBLISHED.name] = PUBLISHED  # the paper's numbers, as the project holds them
# settings, not measurements: a code span, or a number after `=`, `≥`, `≤` (not a sample size,
# `n = 333`) or a setting's name, with any `/`, `–`, `to` list that follows (`restart 0.3/0.7`,
# `weight 0.1 to 1.0`), or a count named as a setting (`1,000 resamples`, a `1,024-token budget`)
SETTING = re.compile(r"`[^`]*`|(?:(?<!\bn )(?<!\bn)[=≥≤]|\b(?:restart|damping|weight|threshold|context|BY(?:-SA)?))\s*"
                     r"\d+(?:\.\d+)?(?:\s*(?:/|–|to|and)\s*\**\d+(?:\.\d+)?\**)*"
                     r"|\b\d[\d,]*[\s-](?:bootstrap\s)?(?:resamples|token budget|token context)\b")


def docs() -> list[Path]:
    return [d for d in DOCS if d.is_file()]


def nodes(obj: Any) -> Iterator[Any]:
    """``obj`` and everything inside it (dict values, list items), depth first."""
    yield obj
    for v in obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else ():
        yield from nodes(v)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def leaves(obj: Any) -> Iterator[float]:
    return (float(v) for v in nodes(obj) if _is_number(v))


NUMBER = re.compile(r"(?<![\w.])[+−-]?\d[\d,]*(?:\.\d+)?")


def as_number(written: str) -> float:
    """A number as the docs and text records write it: ``5,551.9``, ``−6.2``."""
    return float(written.replace(",", "").replace("−", "-"))


# a progress bar's redraw ("embed_atoms:  50%|█████     | 512/1015 [00:02<00:02, 177.73it/s]"): its
# counts and rates are not results, and they would let almost any number pass
PROGRESS = re.compile(r"[\w ]*:\s*\d+%\|[^|\n]*\|\s*\d+/\d+\s*\[[^\]\n]*\]")


@functools.cache
def record_numbers(path: Path) -> frozenset[float]:
    """The numbers a record holds, as it holds them: a JSON record's values, or each number a text
    record prints (a benchmark's report, a rendered results table)."""
    if path.suffix == ".json":
        return frozenset(leaves(json.loads(path.read_text())))
    out = set()
    text = PROGRESS.sub(" ", path.read_text(errors="replace"))
    text = re.sub(r"\bx(?=\d)", "x ", text)  # ratios printed as x17.6
    for m in NUMBER.finditer(text):
        try:
            out.add(as_number(m.group(0)))
        except ValueError:
            continue
    if took := elapsed(text):
        out.add(took)
    return frozenset(out)


@functools.cache
def record_values(path: Path) -> frozenset[float]:
    """The numbers a record holds, rounded to one decimal: what a one-decimal figure is compared with."""
    return frozenset(round(v, 1) for v in record_numbers(path))


_STAMP = r"^# {}: (\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"


def elapsed(text: str) -> float | None:
    """Seconds between a text record's ``# started:`` and ``# finished:`` lines
    (``scripts/record_output.sh`` writes both): how long the recorded command took."""
    start, end = (re.search(_STAMP.format(k), text, re.MULTILINE) for k in ("started", "finished"))
    if not (start and end):
        return None
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return (datetime.strptime(end.group(1), fmt) - datetime.strptime(start.group(1), fmt)).total_seconds()


# a JSON key that holds a time: index_s, wall_s, seconds, llm_latency_s, nlp_cpu_s, took_ms, elapsed
TIME_KEY = re.compile(r"(?:^|_)(?:s|ms|sec|secs|seconds|min|minutes|h|hours|latency|wall|time|times|elapsed|"
                      r"duration|took)(?:$|_)", re.IGNORECASE)
# a time a text record prints with its unit: "in 4 s", "29.5 s", "1,200 ms", "3.2 min"
TIME_PRINTED = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(ms|s|sec|seconds|min|minutes|h)\b")
_PRINTED_S = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "seconds": 1.0, "min": 60.0, "minutes": 60.0, "h": 3600.0}


def _json_times(obj: Any, timed: bool = False) -> Iterator[float]:
    """The numbers under a time's key, at any depth (``stages_wall_cpu_s.embed_atoms: [79.2, 155.7]``)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _json_times(v, timed or bool(TIME_KEY.search(str(k))))
    elif isinstance(obj, list):
        for v in obj:
            yield from _json_times(v, timed)
    elif _is_number(obj) and timed:
        yield float(obj)


def _provenance_elapsed(data: Any) -> float | None:
    """Seconds between a JSON record's ``provenance.started_at`` and ``finished_at``."""
    prov = data.get("provenance") if isinstance(data, dict) else None
    if not (isinstance(prov, dict) and prov.get("started_at") and prov.get("finished_at")):
        return None
    start, end = (datetime.fromisoformat(str(prov[k]).replace("+0000", "+00:00")) for k in ("started_at", "finished_at"))
    return (end - start).total_seconds()


@functools.cache
def time_values(path: Path) -> frozenset[float]:
    """The times a record holds, in seconds or as written: a JSON record's values under a time's key
    (``index_s``, ``llm_latency_s``, ``seconds``) and its run's duration (provenance start to
    finish); a text record's numbers printed with a time unit, converted to seconds, and its own
    duration. A time in the docs is checked against these only: a coverage of 14.0 is no "14 min"."""
    if path.suffix in (".json", ".jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] \
            if path.suffix == ".jsonl" else [json.loads(path.read_text())]
        out = {v for row in rows for v in _json_times(row)}
        out |= {t for row in rows if (t := _provenance_elapsed(row)) is not None}
        return frozenset(out)
    text = PROGRESS.sub(" ", path.read_text(errors="replace"))
    out = {as_number(m.group(1)) * _PRINTED_S[m.group(2)] for m in TIME_PRINTED.finditer(text)}
    if took := elapsed(text):
        out.add(took)
    return frozenset(out)


def values_for(doc: Path, record: Path, block: str = "") -> frozenset[float]:
    """``record``'s values as a figure in ``doc`` is checked against them. The paper's numbers are
    many (every table), so in ``experiments/<tableN>/README.md`` only table N's and the paper's text
    numbers count, and those of another table the block names (``Table 6's Medical row``): a figure
    quoted from the wrong table, or slipped by a digit, no longer passes because some other table
    holds it (``scripts/doc_checker_power.py`` at commit 15f4e3c measured how often: results/ci/doc_checker_power_*.txt)."""
    table = doc.parent.name
    if record == PUBLISHED and doc.parent.parent.name == "experiments":
        published = json.loads(PUBLISHED.read_text())
        if table in published["tables"]:
            named = {f"table{n}" for n in re.findall(r"\bTable (\d+)", block)} & set(published["tables"])
            return frozenset(round(v, 1) for t in sorted({table} | named) for v in leaves(published["tables"][t])) \
                | frozenset(round(v, 1) for v in leaves(published["text_numbers"]))
    return record_values(record)


_NUM = r"[+−-]?\d[\d,]*\.\d"
# a one-decimal figure with its bracketed interval: "25.0 [20.6, 29.4]", "**+6.6** [2.2, 11.2]"
INTERVAL = re.compile(rf"(?<![\w.,])({_NUM})\**\s*\[({_NUM}),\s*({_NUM})\]")


def _decimal(fig: str) -> float:
    return round(as_number(fig), 1)


def _pair(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(map(_is_number, v))


def _json_intervals(obj: Any) -> Iterator[tuple[float, float, float]]:
    """A JSON record's (estimate, low, high) entries: a number beside its ``<key>_ci95`` pair, or a
    ``[d, [lo, hi]]`` / ``[d, [lo, hi], n]`` list."""
    for node in nodes(obj):
        if isinstance(node, dict):
            yield from ((v, *node[f"{k}_ci95"]) for k, v in node.items()
                        if _is_number(v) and _pair(node.get(f"{k}_ci95")))
        elif isinstance(node, list) and len(node) in (2, 3) and _is_number(node[0]) and _pair(node[1]):
            yield (node[0], *node[1])


@functools.cache
def record_intervals(path: Path) -> frozenset[tuple[float, float, float]]:
    """(estimate, low, high) entries a record holds, rounded to one decimal."""
    if path.suffix == ".json":
        found = _json_intervals(json.loads(path.read_text()))
    elif path.suffix != ".jsonl":  # rows hold per-question values, not estimates
        found = (m.groups() for m in INTERVAL.finditer(path.read_text(errors="replace")))
    else:
        return frozenset()
    return frozenset(tuple(_decimal(str(x)) for x in t) for t in found)


def intervals(block: str) -> list[tuple[str, tuple[float, float, float]]]:
    """The figures a block writes with their interval: (as written, (estimate, low, high))."""
    return [(m.group(0), (_decimal(m.group(1)), _decimal(m.group(2)), _decimal(m.group(3))))
            for m in INTERVAL.finditer(SETTING.sub(" ", block))]


def expand(ref: str) -> list[str]:
    """``run{1,2,3}.txt`` → the three names it abbreviates."""
    m = re.search(r"\{([^{}]*)\}", ref)
    if not m:
        return [ref]
    return [x for alt in m.group(1).split(",") for x in expand(ref[:m.start()] + alt + ref[m.end():])]


def cited_records(block: str) -> list[Path]:
    """Records a block names: ``results/...`` record paths (JSON, or a printed report), or a JSON
    record's unique file name."""
    out: dict[Path, None] = {}
    for m in REF.finditer(block):
        for ref in expand(m.group(0).rstrip(".,`)")):
            p = ROOT / ref
            if p.suffix in RECORD_SUFFIXES and p.is_file():
                out[p] = None
            elif p.is_dir():  # a folder of runs: its JSON records, and the metrics.json of each run below it
                out.update(dict.fromkeys(sorted(p.glob("*.json")) + sorted(p.rglob("metrics.json"))))
    for name in re.findall(r"[A-Za-z0-9_.-]+\.(?:json|txt|md|csv)", block):
        if name in RECORDS:
            out[RECORDS[name]] = None
    return list(out)


def figures(block: str) -> list[str]:
    """The one-decimal figures a block states, settings left out."""
    return FIGURE.findall(SETTING.sub(" ", block))


# an integer time with its unit: "58 s", "2 min 14 s" (one time), "~8 min", "4,729 ms"; decimal
# times ("1.5 s") are one-decimal figures already; "tok/s" and "ms/query" are rates, not times
_T = r"(\d{1,3}(?:,\d{3})+|\d+)\s?(ms|s|min|h)\b(?!/)"
TIME = re.compile(rf"(?<![\w.,+−/-]){_T}(?:\s+(\d+)\s?(s|min)\b(?!/))?")  # "2 min 14 s" is one time
_UNIT_S = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
ESTIMATE = re.compile(r"\bestimate", re.IGNORECASE)


def _measured(block: str) -> str:
    """The text of ``block`` whose times and percentages are checked: settings left out, and
    nothing of a block that says it is an estimate."""
    return "" if ESTIMATE.search(block) else SETTING.sub(" ", block)


def times(block: str) -> list[tuple[str, int, str]]:
    """The integer times a block states, settings left out: (as written, number, unit); a time of two
    units (``2 min 14 s``) is one time in the smaller unit (134, ``s``). A block that says it is an
    estimate states none that are checked."""
    out = []
    for m in TIME.finditer(_measured(block)):
        n, unit = int(m.group(1).replace(",", "")), m.group(2)
        if m.group(3) and _UNIT_S[m.group(4)] < _UNIT_S[unit]:
            n, unit = round(n * _UNIT_S[unit] / _UNIT_S[m.group(4)]) + int(m.group(3)), m.group(4)
        out.append((m.group(0), n, unit))
    return out


def holds_time(values: set[float], n: int, unit: str) -> bool:
    """Whether a record holding ``values`` backs the time ``n unit``: a value that rounds to ``n`` as
    written (the record uses the same unit), or a value in seconds that rounds to ``n`` in ``unit``."""
    scale = _UNIT_S[unit]
    return any(round(v) == n or round(v / scale) == n for v in values)


# a percentage ("69%", "63.4%"), not a confidence level ("95% CI", "95% bootstrap intervals") nor a
# tolerance ("within 20%", "up to 25%")
PERCENT = re.compile(r"(?<![\w.,+−/-])(?<!within )(?<!up to )([+−-]?\d+(?:\.\d+)?)\s?%"
                     r"(?!\s*(?:CI\b|confidence|bootstrap|interval))")


def percents(block: str) -> list[str]:
    """The percentages a block states, settings and tolerances left out; none in a block that says
    it is an estimate."""
    return PERCENT.findall(_measured(block))


# a count written with thousands separators ("6,119 passages", "972 of 22,545 atoms"), or an
# approximate one ("~4,400 tokens"); not a decimal (5,551.9 is a figure), a percentage, a time, a
# size (4.8 MB) or a ratio
COUNT = re.compile(r"(?<![\w.,+−/-])(~\s?|≈\s?|about\s)?(\d{1,3}(?:,\d{3})+)"
                   r"(?![\d,]|\.\d|\s?%|\s?(?:ms|s|min|h)\b|\s?[KMGT]i?B\b|\s?×)")


# a small count is checked where it is said as one: both sides of "18 of the 38 attempts", and a
# sample size ("n = 333")
PART_OF = re.compile(r"(?<![\w.,+−/-])(\d[\d,]*) (?:of|out of) (?:the |its |their )?(\d[\d,]*)"
                     r"(?![\d,]|\.\d|\s?%|\s?(?:ms|s|min|h)\b)")
SAMPLE_SIZE = re.compile(r"\bn\s?=\s?(\d[\d,]*)\b")


def counts(block: str) -> list[tuple[str, int, bool]]:
    """The counts a block states, settings left out: (as written, number, approximate); none in a
    block that says it is an estimate. Numbers with thousands separators wherever they are; smaller
    ones as parts of a whole ("9 of 20") and as sample sizes ("n = 20")."""
    text = _measured(block)
    out = [(m.group(0).strip(), int(m.group(2).replace(",", "")), bool(m.group(1))) for m in COUNT.finditer(text)]
    grouped = {n for _, n, _ in out}
    small = [x for m in PART_OF.finditer(text) for x in m.groups()] + SAMPLE_SIZE.findall(text)
    return out + [(x, n, False) for x in small if (n := int(x.replace(",", ""))) not in grouped]


def holds_count(values: set[float], n: int, approximate: bool = False) -> bool:
    """Whether a record holding ``values`` backs the count ``n``: the value itself, or for an
    approximate count (``~4,400``) a value that rounds to it at the digits written (4,350 to 4,450)."""
    if not approximate:
        return float(n) in values
    zeros = len(str(n)) - len(str(n).rstrip("0"))
    return any(abs(v - n) <= 0.5 * 10 ** zeros for v in values)


def stated(block: str) -> list[str]:
    """Every checked figure a block states, as written: one-decimal figures, times, percentages, counts."""
    return (figures(block) + [t for t, _, _ in times(block)] + [f"{p}%" for p in percents(block)]
            + [c for c, _, _ in counts(block)])


def stated_values(block: str, values: set[float]) -> set[float]:
    """Every number a block states (``6,119``, ``0.46``, ``58.9``) that its records hold."""
    found = (as_number(m.group(0)) for m in NUMBER.finditer(SETTING.sub(" ", block)))
    return {x for x in found if round(x, 1) in values}


def percent_digits(pct: str) -> int:
    """Decimals a percentage is written with: what it is compared at."""
    return len(pct.split(".")[1]) if "." in pct else 0


def holds_percent(values: set[float], pct: str, stated: Iterable[float] = ()) -> bool:
    """Whether records holding ``values`` back a percentage, at the precision written: a recorded
    value, a recorded fraction (0.69 for 69%), or a share of two recorded numbers ``stated`` beside
    it (100·a/b, or the rest, 100·(1 − a/b)), so a derived share names what it is a share of."""
    p, digits = as_number(pct), percent_digits(pct)

    def same(x: float) -> bool:
        return abs(x - p) <= 0.5 * 10 ** -digits + 1e-9

    if any(same(v) or same(100 * v) for v in values):
        return True
    q = [x for x in stated if x]
    return any(a != b and (same(100 * a / b) or same(100 * (1 - a / b))) for a in q for b in q)


def holds(values: set[float], fig: str, quoted: Iterable[float] = (), exact: Iterable[float] = ()) -> bool:
    """Whether records holding ``values`` back a figure: the value itself, or, for a signed figure
    (+3.3, −0.9), the difference of two ``quoted`` figures (the recorded figures its block states
    beside it, ``quoted_values``) as written, or of the ``exact`` values they round from
    (``exact_values``), rounded once. A difference of two values the block does not state is not
    enough: a large record holds a pair for almost any difference; nor is a difference off by the
    rounding of both (that let a slip of 0.1 pass)."""
    x = _decimal(fig)
    if x in values:
        return True
    if fig[0] not in "+−-":
        return False
    return any(round(a - b, 1) == x for pool in (set(quoted), set(exact)) for a in pool for b in pool)


def quoted_values(block: str, values: set[float]) -> set[float]:
    """The unsigned figures a block states that its records hold: what a signed figure beside them
    may be the difference of."""
    return {x for f in figures(block) if f[0] not in "+−-" and (x := _decimal(f)) in values}


def exact_values(records: Iterable[Path], quoted: set[float]) -> set[float]:
    """The values of ``records``, unrounded, that the ``quoted`` figures round from: a difference the
    record's own numbers give (59.04 − 55.66 = 3.38 → +3.4) where the figures as written give +3.3."""
    return {v for r in records for v in record_numbers(r) if round(v, 1) in quoted}


def blocks(text: str) -> Iterator[tuple[str, list[Path]]]:
    """(block, records it is checked against): paragraphs, and each table row, outside code fences.
    A table row is checked against the records it names, else those of the paragraph above the table.
    A code fence is skipped (commands name records they write, not figures) unless it holds a
    printed table (a line starting with ``|``, e.g. what ``make run`` printed): that is checked as
    one block against the records of the paragraph just before it."""
    previous: list[Path] = []
    for part in re.split(r"(```.*?```)", text, flags=re.DOTALL):
        if part.startswith("```"):
            body = part.split("\n", 1)[-1].rsplit("```", 1)[0]  # without the fence (a code span to SETTING)
            if any(line.lstrip().startswith("|") for line in body.splitlines()):
                yield body, previous
            continue
        for block in re.split(r"\n\s*\n", part):
            if block.lstrip().startswith("|"):
                for row in block.strip().splitlines():
                    yield row, cited_records(row) or previous
                continue
            if block.strip():
                previous = cited_records(block)
            yield block, previous


def checked_blocks(doc: Path) -> Iterator[tuple[str, list[Path]]]:
    """The blocks of ``doc`` whose figures are checked: those that name records and do not say
    ``no record kept``."""
    return ((b, r) for b, r in blocks(doc.read_text()) if r and NO_RECORD not in b)


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


def unheld(doc: Path, not_held: Callable[[str, set[float], list[Path]], list[str]]) -> list[tuple[str, list[str], str]]:
    """(figure as written, its records, its block) for each figure of ``doc`` that ``not_held(block,
    values of the block's records, the records)`` returns: one walk for every kind of figure."""
    out = []
    for block, records in checked_blocks(doc):
        values = set().union(*(values_for(doc, r, block) for r in records))
        out += [(w, [r.name for r in records][:3], block.strip()[:80]) for w in not_held(block, values, records)]
    return out


@pytest.mark.parametrize("doc", docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_figures_next_to_a_record_are_in_that_record(doc: Path) -> None:
    def not_held(block: str, values: set[float], records: list[Path]) -> list[str]:
        quoted = quoted_values(block, values)
        exact = exact_values(records, quoted)
        return [f for f in figures(block) if not holds(values, f, quoted, exact)]

    bad = unheld(doc, not_held)
    assert not bad, f"{doc.relative_to(ROOT)}: figures not found in the records their paragraph names: {bad}"


@pytest.mark.parametrize("doc", docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_times_next_to_a_record_are_in_that_record(doc: Path) -> None:
    def not_held(block: str, _: set[float], records: list[Path]) -> list[str]:
        held = set().union(*(time_values(r) for r in records))
        return [w for w, n, unit in times(block) if not holds_time(held, n, unit)]

    bad = unheld(doc, not_held)
    assert not bad, f"{doc.relative_to(ROOT)}: times not found in the records their paragraph names: {bad}"


def test_a_time_is_checked_in_its_unit_and_a_setting_or_estimate_is_not() -> None:
    assert times("index 58 s, set-up 2 min 14 s, compile ~8 min, 4 tok/s, 2.21 ms/query") == [
        ("58 s", 58, "s"), ("2 min 14 s", 134, "s"), ("8 min", 8, "min")]
    assert times("a SLURM job gets `timeout_min: 240`, `llm.timeout_s=300`") == []
    assert times("| embeddings | ~0.2B tokens ≈ 11 min (estimate) |") == []
    took = elapsed("# started: 2026-12-04T14:28:44Z\n...\n# finished: 2026-12-04T14:30:35Z\n")
    assert took == 111 and holds_time({took}, *times("in 1 min 51 s")[0][1:])  # a text record's own duration
    recorded = {57.762, 451.2}  # seconds, as a JSON record holds them
    assert holds_time(recorded, 58, "s") and holds_time(recorded, 8, "min")  # 451.2 s is 7.5 min → 8
    assert not holds_time(recorded, 71, "s") and not holds_time(recorded, 6, "min")


def test_a_time_is_held_only_by_a_recorded_time(tmp_path: Path) -> None:
    """A coverage of 14.0 held "14 min" (the novels' indexing, never recorded) before times were typed."""
    rec = tmp_path / "r.json"
    rec.write_text(json.dumps({"rows": [{"cov@600": 14.0, "index_s": 57.8, "n": 71}],
                               "provenance": {"started_at": "2026-12-04T12:59:34+0000",
                                              "finished_at": "2026-12-04T13:21:26+0000"}}))
    held = time_values(rec)
    assert holds_time(held, 58, "s") and holds_time(held, 22, "min")  # a timed key, the run's own duration
    assert not holds_time(held, 14, "min") and not holds_time(held, 71, "s")  # a coverage, a count
    txt = tmp_path / "t.txt"
    txt.write_text("contexts for 333 questions in 4 s\nq 320-332:  29.5 s, failed 0\n")
    assert time_values(txt) == {4.0, 29.5}


@pytest.mark.parametrize("doc", docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_percentages_next_to_a_record_are_in_that_record_or_a_share_of_its_figures(doc: Path) -> None:
    bad = unheld(doc, lambda b, v, _: [f"{p}%" for p in percents(b) if not holds_percent(v, p, stated_values(b, v))])
    assert not bad, f"{doc.relative_to(ROOT)}: percentages not found in the records their paragraph names: {bad}"


@pytest.mark.parametrize("doc", docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_counts_next_to_a_record_are_in_that_record(doc: Path) -> None:
    bad = unheld(doc, lambda b, v, _: [w for w, n, approx in counts(b) if not holds_count(v, n, approx)])
    assert not bad, f"{doc.relative_to(ROOT)}: counts not found in the records their paragraph names: {bad}"


def test_a_count_is_checked_exactly_unless_approximate_and_a_setting_is_not() -> None:
    assert counts("6,119 passages → 21,573 atoms (972 merged), ~4,400 tokens, 5,551.9 ms, 4,729 ms, 1,200%") == [
        ("6,119", 6119, False), ("21,573", 21573, False), ("~4,400", 4400, True)]
    assert counts("(1,000 resamples), its 1,024-token budget, context 8,192, `max_tokens=1,024`") == []
    assert counts("18 of the 38 attempts, n = 333, 9 to 11 of 20 questions, 5 of 10 s") == [
        ("18", 18, False), ("38", 38, False), ("11", 11, False), ("20", 20, False), ("333", 333, False)]
    assert counts("`dataset.limit=20`, top-k = 25") == []  # a setting stays a setting
    assert counts("| embeddings | 12,000 strings (estimate) |") == []
    values = {6119.0, 4417.0}
    assert holds_count(values, 6119) and not holds_count(values, 6118) and not holds_count(values, 6120, False)
    assert holds_count(values, 4400, True) and not holds_count(values, 4500, True)
    assert not holds_count(values, 4400)  # written without "~" a count is exact


def test_a_percentage_is_a_recorded_value_fraction_or_share_and_a_level_is_not() -> None:
    assert percents("69% of the time, 63.4% of tokens, a 95% CI, 95% bootstrap intervals, up to 25% failed") == [
        "69", "63.4"]
    values = {0.69, 63.4, 93768.0, 10451.0, 2.0}
    assert holds_percent(values, "69") and holds_percent(values, "63.4")  # a fraction, a value
    assert not holds_percent(values, "70") and not holds_percent(values, "63.5")
    block = "drops 89% of the containment edges (93,768 → 10,451)"
    assert holds_percent(values, "89", stated_values(block, values))  # 1 − 10,451 / 93,768
    assert not holds_percent(values, "88", stated_values(block, values))
    assert not holds_percent(values, "89")  # the same share without the figures it is a share of


@pytest.mark.parametrize("doc", docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_figure_with_its_interval_is_one_estimate_of_its_record(doc: Path) -> None:
    bad = []
    for block, records in checked_blocks(doc):
        held = set().union(*(record_intervals(r) for r in records))
        bad += [(written, [r.name for r in records][:3]) for written, triple in intervals(block) if triple not in held]
    assert not bad, (f"{doc.relative_to(ROOT)}: figures whose estimate and interval are not one entry of the "
                     f"records their paragraph names: {bad}")


def test_an_interval_must_sit_with_its_own_estimate(tmp_path: Path) -> None:
    rec = tmp_path / "summary.json"
    rec.write_text(json.dumps({"F1": 25.0, "F1_ci95": [20.6, 29.4], "EM": 21.9, "EM_ci95": [17.7, 26.1],
                               "drop": [1.1, [-3.3, 5.4], 333]}))
    txt = tmp_path / "log.txt"
    txt.write_text("atomicrag   21.9     [17.7, 26.1]  25.0   [20.6, 29.4]\n")
    for path in (rec, txt):
        held = record_intervals(path)
        [(_, ok)] = intervals("F1 **25.0** [20.6, 29.4]")
        assert ok in held
        for wrong in ("F1 21.9 [20.6, 29.4]", "F1 25.1 [20.6, 29.4]", "F1 25.0 [20.6, 29.5]"):
            [(_, t)] = intervals(wrong)
            assert t not in held, wrong  # every value is in the record, but not as one estimate
    [(_, d)] = intervals("a drop of +1.1 [−3.3, 5.4]")
    assert d in record_intervals(rec)
    assert intervals("with `ci=[0.1, 0.9]` set") == []


@pytest.mark.parametrize("doc", docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_names_its_record(doc: Path) -> None:
    bare = [(figs[:4], block.strip()[:100]) for block, records in blocks(doc.read_text())
            if (figs := stated(block)) and not records and NO_RECORD not in block]
    assert not bare, (f"{doc.relative_to(ROOT)}: paragraphs or table rows state figures but name no record "
                      f"(a results/ path, a record's file name, or paper_tables.json): {bare}")


def test_figures_without_a_record_only_become_fewer() -> None:
    marked = [(d.relative_to(ROOT), block.strip()[:80]) for d in docs() for block, _ in blocks(d.read_text())
              if NO_RECORD in block and stated(block)]
    assert len(marked) <= NO_RECORD_CEILING, (
        f"{len(marked)} paragraphs or rows state figures marked {NO_RECORD!r}, the ceiling is "
        f"{NO_RECORD_CEILING}: measure again and cite the record instead: {marked}")


def test_settings_are_not_figures() -> None:
    assert figures("restart 0.3, entity cosine ≥ 0.9, `retriever.damping=0.7`, restart 0.3/0.7") == []
    assert figures("R@5 93.8 with restart 0.3, 5,551.9 ms") == ["93.8", "5,551.9"]


def test_the_checker_catches_a_figure_its_record_does_not_hold(tmp_path: Path) -> None:
    record = next(iter(RECORDS.values()))
    text = f"The run (`{record.relative_to(ROOT)}`) scored **123.4** on everything."
    (_, records), = list(blocks(text))
    assert records == [record] and 123.4 not in set().union(record_values(record))


def test_an_experiment_readme_quotes_its_own_paper_table() -> None:
    """73.1 is the default row's average in both; 62.5 (Llama-3.1-8B's Creat. in Table 10) is no Table 8 value."""
    table8, table10 = ROOT / "experiments/table8/README.md", ROOT / "experiments/table10/README.md"
    assert holds(set(values_for(table10, PUBLISHED)), "62.5") and holds(set(values_for(table8, PUBLISHED)), "73.1")
    assert not holds(set(values_for(table8, PUBLISHED)), "62.5") and holds(set(record_values(PUBLISHED)), "62.5")
    assert holds(set(values_for(table8, PUBLISHED, "Llama's Creat. in Table 10")), "62.5")  # a table it names


def test_a_printed_table_is_checked_against_the_record_named_before_it() -> None:
    record = ROOT / "results/quickstart/make_run_20261204b.txt"
    intro = f"What it printed (`{record.relative_to(ROOT)}`):\n\n"
    table = "```\n| system | R@2 |\n|---|---:|\n| AtomicRAG | {} |\n```\n"
    [(body, records)] = [b for b in blocks(intro + table.format("75.0")) if "AtomicRAG" in b[0]]
    assert records == [record] and figures(body) == ["75.0"]
    held = set(record_values(record))
    assert holds(held, "75.0")
    [(body, _)] = [b for b in blocks(intro + table.format("864.7")) if "AtomicRAG" in b[0]]
    assert figures(body) == ["864.7"] and not holds(held, "864.7")  # a table from another run
    assert not any("1.5" in b for b, _ in blocks("```\nmake run ARGS=1.5\n```\n"))  # a command is skipped


def test_a_signed_figure_is_recorded_or_the_difference_of_two_figures_beside_it() -> None:
    values = {59.0, 55.7, 66.9, 4.2}
    block = "PPR (59.0) beats dense atoms (55.7) by +3.3"
    quoted = quoted_values(block, values)
    assert quoted == {59.0, 55.7}
    assert holds(values, "+3.3", quoted) and holds(values, "−3.3", quoted)  # 59.0 − 55.7
    assert holds(values, "+4.2")  # a recorded difference (a paired one, say)
    assert not holds(values, "3.3", quoted)  # unsigned: a value, not a difference
    # 66.9 − 55.7 = 11.2: both recorded, but 66.9 is not stated beside it, so a slip to +11.2 fails
    assert not holds(values, "+11.2", quoted) and not holds(values, "+9.9", quoted)
    assert not holds(values, "+3.4", quoted) and not holds(values, "+3.2", quoted)  # off by a rounding: a slip
    # recorded as 59.04 and 55.66: the record's own difference (3.38) rounds to +3.4, as written +3.3
    assert holds(values, "+3.4", quoted, {59.04, 55.66}) and holds(values, "+3.3", quoted, {59.04, 55.66})
    assert not holds(values, "+3.5", quoted, {59.04, 55.66})


def test_a_brace_list_names_each_record() -> None:
    assert expand("results/b/run{1,2,3}.txt") == ["results/b/run1.txt", "results/b/run2.txt", "results/b/run3.txt"]


# Records that a figure in the docs is checked against but that do not say how they were made: no
# command and commit (they predate `harness/provenance.py` and `scripts/record_output.sh`). Each
# re-run with its documented command leaves this list; nothing may join it, and the test below fails
# when a listed record has gained its provenance or is no longer cited, so the list only shrinks.
WITHOUT_PROVENANCE: frozenset[str] = frozenset()  # empty since stop 41: keep it so


def says_provenance(prov: Any) -> bool:
    """Whether ``prov`` (a ``harness/provenance.py`` record) names the command and the commit."""
    return isinstance(prov, dict) and bool(prov.get("command")) and bool((prov.get("git") or {}).get("commit"))


def says_how_it_was_made(path: Path) -> bool:
    """Whether a record names the command and the commit that made it: a JSON record's ``provenance``
    (or its own or its ``meta``'s ``command`` and ``commit``), or a text record's header as
    ``scripts/record_output.sh`` writes it."""
    if path == PUBLISHED:
        return True  # the paper's numbers; their source is the paper
    if path.suffix == ".jsonl":  # per-question rows: as made as the run record written beside them
        beside = [path.parent / n for n in ("runs.json", "metrics.json") if (path.parent / n).is_file()]
        return bool(beside) and all(says_how_it_was_made(b) for b in beside)
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        if isinstance(data, list):  # bench_qa's runs.json: one entry per answering run, each with its provenance
            return bool(data) and all(isinstance(r, dict) and says_provenance(r.get("provenance")) for r in data)
        if not isinstance(data, dict):
            return False
        if says_provenance(data.get("provenance")):
            return True
        if "flags_from" in data:  # a bench_qa summary: its own call, and every run that answered its rows
            runs = data.get("runs") or []
            return bool(data.get("command") and data.get("commit") and runs) and all(
                says_provenance(r.get("provenance")) for r in runs)
        return any(isinstance(d, dict) and d.get("command") and d.get("commit") for d in (data, data.get("meta")))
    if path.suffix == ".md" and "\n## Runs used\n" in path.read_text():
        # a make_tables table: as made as the runs it was built from (each run's metrics.json)
        runs = re.findall(r"^- .*?: `([^`]+)` — ", path.read_text().split("\n## Runs used\n")[1], flags=re.M)
        return bool(runs) and all(says_how_it_was_made(path.parent / r / "metrics.json") for r in runs)
    head = path.read_text(errors="replace").splitlines()[:8]
    return any(h.startswith("# command:") for h in head) and any(h.startswith("# commit:") for h in head)


def cited_with_figures() -> dict[Path, set[str]]:
    """Each record that backs a figure or a count in the docs → the documents that cite it."""
    out: dict[Path, set[str]] = {}
    for doc in docs():
        for block, records in blocks(doc.read_text()):
            figs, cs = figures(block), counts(block)
            for r in records if figs or cs else []:
                held = values_for(doc, r, block)
                quoted = quoted_values(block, held)
                if any(holds(held, f, quoted, exact_values([r], quoted)) for f in figs) or any(
                        holds_count(held, n, approx) for _, n, approx in cs):
                    out.setdefault(r, set()).add(str(doc.relative_to(ROOT)))
    return out


def test_every_record_behind_a_figure_says_how_it_was_made() -> None:
    cited = cited_with_figures()
    unmade = {str(r.relative_to(ROOT)): sorted(d) for r, d in cited.items() if not says_how_it_was_made(r)}
    new = {r: d for r, d in unmade.items() if r not in WITHOUT_PROVENANCE}
    assert not new, ("records behind figures in the docs name no command and commit; re-run them with "
                     f"their command (scripts/record_output.sh for printed reports): {new}")
    stale = sorted(WITHOUT_PROVENANCE - set(unmade))
    assert not stale, f"these records now say how they were made or are no longer cited: drop them from WITHOUT_PROVENANCE: {stale}"


def test_a_record_says_how_it_was_made(tmp_path: Path) -> None:
    bare = tmp_path / "r.json"
    bare.write_text(json.dumps({"rows": [1.5]}))
    made = tmp_path / "m.json"
    made.write_text(json.dumps({"rows": [1.5], "provenance": {"command": "python x.py", "git": {"commit": "abc"}}}))
    text = tmp_path / "t.txt"
    text.write_text("# command: python x.py\n# commit: abc\n1.5\n")
    assert not says_how_it_was_made(bare) and says_how_it_was_made(made) and says_how_it_was_made(text)
    text.write_text("1.5\n")  # the figures alone
    assert not says_how_it_was_made(text)
    # a QA summary names its own call and every answering run's provenance
    answered = {"provenance": {"command": "python scripts/bench.py qa --n 3", "git": {"commit": "abc"}}}
    qa = tmp_path / "summary.json"
    qa.write_text(json.dumps({"flags_from": "runs.json", "command": "benchmarks/qa.py --summary-only", "commit": "abc",
                              "runs": [answered]}))
    assert says_how_it_was_made(qa)
    qa.write_text(json.dumps({"flags_from": "runs.json", "command": "benchmarks/qa.py --summary-only", "commit": "abc",
                              "runs": [answered, {"flags": {}}]}))  # one run without its provenance
    assert not says_how_it_was_made(qa)
    qa.write_text(json.dumps({"flags_from": "the summary call (this folder has no runs.json)",
                              "command": "benchmarks/qa.py --summary-only", "commit": "abc"}))
    assert not says_how_it_was_made(qa)
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps([answered]))
    assert says_how_it_was_made(runs)
    rows = tmp_path / "answers.jsonl"  # the rows those runs answered
    rows.write_text(json.dumps({"f1": 1.0}) + "\n")
    assert says_how_it_was_made(rows) and not says_how_it_was_made(tmp_path / "tables" / "none.jsonl")
    runs.write_text(json.dumps([answered, {"flags": {}}]))
    assert not says_how_it_was_made(runs)
    # a make_tables table is as made as every run it lists
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "b").mkdir()
    (tmp_path / "runs" / "a" / "metrics.json").write_text(made.read_text())
    (tmp_path / "runs" / "b" / "metrics.json").write_text(bare.read_text())
    table = tmp_path / "tables" / "t.md"
    table.parent.mkdir()
    table.write_text("| x |\n\n## Runs used\n\n- A / d: `../runs/a` — n=1\n")
    assert says_how_it_was_made(table)
    table.write_text("| x |\n\n## Runs used\n\n- A / d: `../runs/a` — n=1\n- B / d: `../runs/b` — n=1\n")
    assert not says_how_it_was_made(table)
