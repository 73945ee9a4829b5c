"""Figures the benchmarks report, computed one way: imported by each script as ``stats`` (its own folder
is on ``sys.path`` when it runs as ``python bench/<script>.py``)."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(share * len(ordered) + 0.5)))
    return ordered[rank - 1]
