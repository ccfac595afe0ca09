"""What the benchmark scripts share: the percentile bootstrap of a mean over questions.

The library's tables use ``harness.report_tables.intervals`` (stratified, numpy); the scripts'
committed records were made with this one (``random.Random``, fixed seed), which stays so that
they re-derive to the decimal.
"""
from __future__ import annotations

import random


def bootstrap(values: list[float], reps: int = 1000, seed: int = 0) -> list[float]:
    """95% percentile interval of the mean of ``values`` (in [0, 1]), in points, over question resamples."""
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(reps))
    return [round(100 * means[int(0.025 * reps)], 1), round(100 * means[int(0.975 * reps) - 1], 1)]
