#!/usr/bin/env python
"""How often the docs' figure check would let a wrong figure through.

``tests/scripts/test_doc_records.py`` accepts a figure when a record its paragraph (or table row)
cites holds the same value at one decimal, or, for a signed figure, the difference of two recorded
figures stated beside it; a figure written with its interval must be one (estimate, low, high) entry of a record.
This moves every figure it checks by +0.1 and by -0.1 and counts how many of the moved figures it
would still accept: the share of one-digit slips that pass by coincidence, because a large record
holds many values. An integer time (``58 s``) is moved by one of its units, a percentage by one unit of its last
digit, a count (``6,119``) by one, an approximate count (``~4,400``) by one unit of its last nonzero digit.
Prints one line per kind of figure (signed, unsigned, with its interval, whose estimate is moved,
time, percentage, count) and per document.

    python scripts/doc_checker_power.py
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "scripts"))

import test_doc_records as check  # noqa: E402  (the checker itself, not a copy of its rules)


def moved(fig: str, delta: float) -> str:
    """``fig`` moved by ``delta``, written as the docs write it (a sign kept for signed figures)."""
    x = round(check.as_number(fig) + delta, 1)
    return (("+" if x >= 0 else "−") + f"{abs(x):.1f}") if fig[0] in "+−-" else f"{x:.1f}"


def main() -> None:
    total: Counter[str] = Counter()
    passed: Counter[str] = Counter()

    def tally(name: str, kind: str, ok: bool) -> None:  # overall and per document
        for key in (kind, f"{name} ({kind})"):
            total[key] += 1
            passed[key] += ok

    for doc in check.docs():
        name = str(doc.relative_to(ROOT))
        for block, records in check.checked_blocks(doc):
            values = set().union(*(check.values_for(doc, r, block) for r in records))
            held = set().union(*(check.record_intervals(r) for r in records))
            for _, (est, low, high) in check.intervals(block):
                for delta in (0.1, -0.1):
                    tally(name, "with interval", (round(est + delta, 1), low, high) in held)
            quoted = check.quoted_values(block, values)
            exact = check.exact_values(records, quoted)
            for fig in check.figures(block):
                for delta in (0.1, -0.1):
                    tally(name, "signed" if fig[0] in "+−-" else "unsigned",
                          check.holds(values, moved(fig, delta), quoted, exact))
            stated = check.stated_values(block, values)
            for pct in check.percents(block):  # a percentage moved by one unit of its last digit
                digits = check.percent_digits(pct)
                for delta in (10 ** -digits, -(10 ** -digits)):
                    tally(name, "percentage",
                          check.holds_percent(values, f"{check.as_number(pct) + delta:.{digits}f}", stated))
            timed = set().union(*(check.time_values(r) for r in records))
            for _, n, unit in check.times(block):  # an integer time moved by one of its units
                for delta in (1, -1):
                    tally(name, "time", check.holds_time(timed, n + delta, unit))
            for _, n, approx in check.counts(block):  # a count moved by one unit of what it is written to
                step = 10 ** (len(str(n)) - len(str(n).rstrip("0"))) if approx else 1
                for delta in (step, -step):
                    tally(name, "count", check.holds_count(values, n + delta, approx))
    for key in sorted(total, key=lambda k: ("(" in k, k)):
        print(f"{key:60s} {passed[key]:5d} of {total[key]:5d} moved figures still accepted "
              f"({100 * passed[key] / total[key]:5.1f}%)")


if __name__ == "__main__":
    main()
