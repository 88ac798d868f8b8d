"""Interval ends from an estimate and its standard error, valid at small samples and within the measure's range.

One function for the estimators (one interval) and the simulation (arrays of them), so the simulated
coverage is the coverage of the intervals the pages and commands print:

* **yes/no labels** (every sampled human value 0 or 1, a share): the Wilson score interval, on the
  estimator's effective sample size n_eff = n * se_srs^2 / se^2 (the human sample's size divided by the
  method's design effect, as survey statistics carries Wilson over to complex designs). For the
  classical method on a uniform sample n_eff = n and this is Wilson's interval exactly. Where the human
  labels are all the same the sample says nothing about the variance, so n_eff = n: five labels of 0 give
  [0, 0.43], not [0, 0].
* **other values**: estimate +- t(n - 1) * se, Student's quantile rather than the normal one.
  Where the standard error is 0 without a census (every sampled value the same), a measure with a known
  range falls back to the Wilson interval at n_eff = n on the rescaled range, the widest variance a
  bounded value with that mean can have.
* **a census** (the finite-population correction with every unit labelled) has no sampling error: zero
  width, the only case.

Ends and estimate are then clipped to the measure's range (None: unbounded).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Bounds = tuple[float, float] | None


def quantiles(alpha: float, df: Any) -> tuple[float, np.ndarray]:
    """(normal quantile, Student quantiles for `df`) of a two-sided 1 - alpha interval."""
    # scipy.special's quantile functions: scipy.stats takes seconds to import, these do not.
    from scipy.special import ndtri, stdtrit

    df = np.maximum(np.asarray(df, dtype=float), 1)
    return float(ndtri(1 - alpha / 2)), np.asarray(stdtrit(df, 1 - alpha / 2), dtype=float)


def interval_ends(
    *,
    estimate: Any,
    se: Any,
    se_srs: Any,
    n: Any,
    binary: Any,
    identical: Any,
    census: Any,
    alpha: float,
    bounds: Bounds,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, lo, hi, wilson) for arrays that broadcast together; `wilson` says which rule gave the ends.

    `se_srs`: the standard error a simple random sample of the same n human values would have (variance
    with n - 1), the reference of the design effect.
    """
    est, se, se_srs = (np.asarray(v, dtype=float) for v in (estimate, se, se_srs))
    n = np.asarray(n, dtype=float)
    binary, identical, census = (np.asarray(v, dtype=bool) for v in (binary, identical, census))
    z, t = quantiles(alpha, n - 1)
    lo, hi = est - t * se, est + t * se
    a, b = bounds if bounds is not None else (0.0, 1.0)
    stuck = ~census & (identical | (se <= 0))
    wilson = ~census & (binary | (stuck if bounds is not None else np.zeros_like(stuck)))
    if wilson.any():
        # np.where evaluates both branches: the cells it discards may divide by zero.
        with np.errstate(divide="ignore", invalid="ignore"):
            deff_n = np.where((se > 0) & (se_srs > 0), n * se_srs**2 / se**2, n)
            n_eff = np.where(stuck, n, deff_n)
            p = np.clip((est - a) / (b - a), 0.0, 1.0)
            k = z**2 / n_eff
            centre = (p + k / 2) / (1 + k)
            half = z / (1 + k) * np.sqrt(p * (1 - p) / n_eff + k / (4 * n_eff))
        lo = np.where(wilson, a + (b - a) * (centre - half), lo)
        hi = np.where(wilson, a + (b - a) * (centre + half), hi)
    if bounds is not None:
        est, lo, hi = (np.clip(v, a, b) for v in (est, lo, hi))
    return est, lo, hi, wilson


def measure_bounds(measure: str, *, difference: bool = False) -> Bounds:
    """The range of a measure's per-unit values ([0, 1] for shares, nDCG, P@k, AP, support and NtR
    measures), or of a difference between two runs; None for counts (ir_measures' Num* measures)."""
    if measure.startswith("Num"):
        return None
    return (-1.0, 1.0) if difference else (0.0, 1.0)


def betting_interval(
    values: np.ndarray, *, population: int, alpha: float, grid: int = 2001
) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per row of `values` (rows, n), each in [0, 1] and drawn without replacement from a
    population of `population` units in random order: the mean of the population's values lies in
    [lo, hi] with probability at least 1 - alpha.

    Waudby-Smith and Ramdas' hedged-capital interval for sampling without replacement (JRSS B 2024,
    section 6): for each candidate mean m, two bettors stake on the next value lying above or below the
    mean of the units not yet drawn (known given m and the values so far); m is rejected where their
    hedged capital reaches 1 / alpha, which by Ville's inequality a true m does with probability at most
    alpha whatever the values' shape. Unlike Student's t it needs no spread shown by the sample: a run
    whose drawn values all sit at 1 still gets a lower end that allows for the turns not drawn, and the
    without-replacement means narrow it as the sample nears a census.
    """
    x = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    rows, n = x.shape
    big = max(population, n)
    m = np.linspace(0.0, 1.0, grid)
    # Predictable plug-in bets from the running mean and variance of the values before each step.
    seen = np.concatenate([np.zeros((rows, 1)), np.cumsum(x, 1)[:, :-1]], 1)
    step = np.arange(1, n + 1, dtype=float)
    mean_hat = (0.5 + np.cumsum(x, 1)) / (step + 1)
    prev_mean = np.concatenate([np.full((rows, 1), 0.5), mean_hat[:, :-1]], 1)
    var_hat = (0.25 + np.cumsum((x - prev_mean) ** 2, 1)) / (step + 1)
    prev_var = np.concatenate([np.full((rows, 1), 0.25), var_hat[:, :-1]], 1)
    bet = np.sqrt(2 * math.log(2 / alpha) / (prev_var * step * np.log1p(step)))
    log_up = np.zeros((rows, grid))
    log_down = np.zeros((rows, grid))
    best = np.full((rows, grid), -np.inf)
    alive = np.ones((rows, grid), dtype=bool)
    for i in range(n):
        left = big - i
        rest = (big * m[None, :] - seen[:, i : i + 1]) / left  # the undrawn units' mean given m
        alive &= (rest >= -1e-12) & (rest <= 1 + 1e-12)
        rest = np.clip(rest, 1e-9, 1 - 1e-9)
        up = np.minimum(bet[:, i : i + 1], 0.75 / rest)
        down = np.minimum(bet[:, i : i + 1], 0.75 / (1 - rest))
        gap = x[:, i : i + 1] - rest
        log_up += np.log1p(up * gap)
        log_down += np.log1p(-down * gap)
        best = np.maximum(best, np.logaddexp(log_up, log_down) + math.log(0.5))
    kept = alive & (best < math.log(1 / alpha))
    # The hull of the candidates kept, one grid step wider each side: between two grid points the true
    # mean may be kept while both neighbours are rejected.
    spacing = 1.0 / (grid - 1)
    lo = np.where(kept.any(1), m[np.argmax(kept, 1)] - spacing, 0.0)
    hi = np.where(kept.any(1), m[grid - 1 - np.argmax(kept[:, ::-1], 1)] + spacing, 1.0)
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
