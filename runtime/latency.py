"""Latency summaries shared by the benchmarks and the demo: the nearest-rank percentile."""

from __future__ import annotations

import math


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100): a latency some run actually had; NaN if none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
