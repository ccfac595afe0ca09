"""What the benchmark scripts share: the percentile bootstrap of a mean over questions, the DEV
halves, and the record writer (every record carries its provenance).

The library's tables use ``harness.report_tables.intervals`` (stratified, numpy); the scripts'
committed records were made with this one (``random.Random``, fixed seed), which stays so that
they re-derive to the decimal.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any


def bootstrap(values: list[float], reps: int = 1000, seed: int = 0) -> list[float]:
    """95% percentile interval of the mean of ``values`` (in [0, 1]), in points, over question resamples."""
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(reps))
    return [round(100 * means[int(0.025 * reps)], 1), round(100 * means[int(0.975 * reps) - 1], 1)]


# DEV halves: the even half (index 0, 2, ...) is where settings were chosen, the odd half (1, 3, ...)
# is reported; "0"/"1" are the older spellings of even/odd
HALVES = {"odd": slice(1, None, 2), "even": slice(0, None, 2), "all": slice(None)}
HALF_ALIASES = {"1": "odd", "0": "even"}
HALF_CHOICES = [*HALVES, *HALF_ALIASES]


def half_name(half: str | int) -> str:
    name = HALF_ALIASES.get(str(half), str(half))
    if name not in HALVES:
        raise SystemExit(f"--half must be one of {', '.join(HALF_CHOICES)}, not {half!r}")
    return name


def select_half(questions: list, half: str | int) -> list:
    """The questions of ``half`` (odd | even | all, or 1 | 0) in file order."""
    return questions[HALVES[half_name(half)]]


def write_record(path: str | Path, record: dict[str, Any], provenance: dict[str, Any]) -> None:
    """Write a benchmark record atomically with its provenance (``harness.provenance``) as its last key."""
    from atomicrag.core.artifacts import write_json_atomic

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(path), {**record, "provenance": provenance}, indent=1)
