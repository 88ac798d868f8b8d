"""The dashboard's statistics as plain functions (no Django): intervals for proportions, medians, and
agreement binned by day or by the assessor's nth judgment, with the drift read off those bins."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

# The 97.5th percentile of the standard normal: a 95% interval.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion `successes / n`; None without observations.

    Preferred to the normal (Wald) interval because it stays inside [0, 1] and keeps its coverage for
    the small counts a gold sample gives (Brown, Cai and DasGupta, 2001).
    """
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def proportion(successes: int, n: int) -> float | None:
    return successes / n if n else None


def median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (ordered[middle - 1] + ordered[middle]) / 2


def share_below(values: Sequence[float], threshold: float) -> float | None:
    """The share of `values` strictly below `threshold`; None when there are none."""
    if not values:
        return None
    return sum(1 for v in values if v < threshold) / len(values)


@dataclass(frozen=True)
class Bin:
    """Agreement within one bin: `agreed` of `n` comparisons (a gold grade, or a co-assessor's)."""

    key: Hashable  # a day, or the first judgment's number in a run of `per` judgments
    n: int
    agreed: int

    @property
    def rate(self) -> float | None:
        return proportion(self.agreed, self.n)


def bin_agreement(keys: Iterable[Hashable], agreed: Iterable[bool]) -> list[Bin]:
    """Comparisons grouped by key, keys in the order first seen (callers pass them in time order)."""
    totals: dict[Hashable, list[int]] = {}
    for key, ok in zip(keys, agreed, strict=True):
        line = totals.setdefault(key, [0, 0])
        line[0] += 1
        line[1] += bool(ok)
    return [Bin(key, n, ok) for key, (n, ok) in totals.items()]


def run_number(index: int, per: int = 100) -> int:
    """The bin of the assessor's `index`-th judgment (from 0) when cut into runs of `per`: its first index."""
    return index // per * per


def drifted(bins: Sequence[Bin], *, min_n: int, drop: float) -> bool:
    """Whether agreement fell by more than `drop` from the first bin to the last, counting only bins
    with at least `min_n` comparisons (two such bins at least)."""
    counted = [b for b in bins if b.n >= min_n]
    if len(counted) < 2:
        return False
    first, last = counted[0].rate, counted[-1].rate
    assert first is not None and last is not None
    return first - last > drop
