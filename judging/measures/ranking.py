"""Rankings with confidence: which pairs of runs are settled, and how far the hybrid ranking agrees with
the ranking the human labels alone give.

Design-neutral on purpose: the functions take per-run estimates with their covariance, or per-pair
differences with their standard errors, and bootstrap draws of the per-run estimates. Any sampling design
that can produce those (whole turns today, pairs within turns tomorrow) gets the same decisions.

* **Settled pairs** are decided under Holm's step-down procedure, which holds the family-wise error rate
  (the chance of calling any one pair wrongly ordered) at alpha over all k(k-1)/2 pairs, whatever their
  dependence. A pair's own interval stays the per-pair 1 - alpha interval; a pair whose interval barely
  excludes 0 may still be unsettled once the number of pairs is counted.
* **Kendall's tau-b** between the hybrid ranking and the human-only ranking, with a percentile bootstrap
  interval from draws of both rankings made on the same resamples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

MULTIPLE_COMPARISONS = "holm"
BOOTSTRAP_DRAWS = 1000


@dataclass(frozen=True)
class PairTest:
    a: str
    b: str
    difference: float
    se: float
    p_value: float


def pair_p_value(*, difference: float, se: float, df: float | None = None) -> float:
    """Two-sided p-value of "no difference": Student's t with `df` degrees of freedom (None: normal).

    A zero standard error (every sampled difference the same, or a census) gives 0 for a non-zero
    difference and 1 for none.
    """
    from scipy.special import ndtr, stdtr

    if not se > 0:
        return 0.0 if difference != 0 else 1.0
    t = abs(difference) / se
    if df is None:
        return float(2 * ndtr(-t))
    return float(min(1.0, 2 * stdtr(max(df, 1.0), -t)))


def holm_reject(p_values: np.ndarray | list[float], alpha: float) -> np.ndarray:
    """Holm's step-down decisions: sort the m p-values ascending and reject while p_(i) <= alpha/(m - i + 1)
    (i from 1), stopping at the first that fails. Returns a boolean per p-value, in the order given."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    reject = np.zeros(m, dtype=bool)
    for rank, index in enumerate(np.argsort(p, kind="stable")):
        if not p[index] <= alpha / (m - rank):
            break
        reject[index] = True
    return reject


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between x and y along the last axis (scipy's `kendalltau` default, vectorised over
    any leading axes); NaN where either side is all ties."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    k = x.shape[-1]
    upper = np.triu_indices(k, 1)
    sx = np.sign(x[..., :, None] - x[..., None, :])[..., upper[0], upper[1]]
    sy = np.sign(y[..., :, None] - y[..., None, :])[..., upper[0], upper[1]]
    concordance = (sx * sy).sum(-1)
    untied = np.sqrt((sx != 0).sum(-1) * (sy != 0).sum(-1).astype(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(untied > 0, concordance / untied, np.nan)


@dataclass(frozen=True)
class TauInterval:
    tau: float
    lo: float
    hi: float
    draws: int
    interval: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "kendall_tau": self.tau,
            "ci": [self.lo, self.hi],
            "draws": self.draws,
            "interval": self.interval,
        }


def tau_interval(
    *,
    hybrid: np.ndarray,
    human: np.ndarray,
    hybrid_draws: np.ndarray,
    human_draws: np.ndarray,
    alpha: float = 0.05,
    interval: str = "percentile bootstrap",
) -> TauInterval | None:
    """Tau-b between two rankings of the same runs and its percentile interval from paired draws
    (B, runs) of both; None with fewer than two runs or a ranking that is all ties."""
    tau = float(kendall_tau_b(hybrid, human))
    if len(hybrid) < 2 or math.isnan(tau):
        return None
    taus = kendall_tau_b(hybrid_draws, human_draws)
    taus = taus[~np.isnan(taus)]
    if not len(taus):
        return None
    lo, hi = np.quantile(taus, [alpha / 2, 1 - alpha / 2])
    return TauInterval(tau=tau, lo=float(lo), hi=float(hi), draws=int(len(taus)), interval=interval)


def unit_bootstrap(
    *,
    human: np.ndarray,
    machine: np.ndarray,
    drawn: np.ndarray,
    pi: np.ndarray | None,
    lam: np.ndarray,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(hybrid, human-only, hybrid draws, human-only draws) of every run, for a design whose units are
    drawn one by one (`human`, `machine`: (runs, units) with NaN where absent; `drawn`: the sampled units;
    `pi`: their probabilities, None for a uniform sample; `lam`: each run's power-tuning weight).

    Each draw resamples the drawn units with replacement and recomputes both estimators on the same
    resample: the hybrid one as lam * mean(machine over every unit) + the weighted mean of the rectifier
    human - lam * machine, the human-only one as the weighted mean of the human values (weights 1/pi).
    The machine term over every unit and lam are held at their values on the full sample.
    """
    rng = np.random.default_rng(seed)
    units = np.flatnonzero(drawn)
    weight = np.ones(human.shape[1]) if pi is None else 1 / np.asarray(pi, dtype=float)
    present = ~np.isnan(machine)
    machine_mean = np.array(
        [row[ok].mean() if ok.any() else np.nan for row, ok in zip(machine, present, strict=True)]
    )
    rect = human - lam[:, None] * machine
    labelled = present & ~np.isnan(human)

    def both(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mask = labelled[:, index]
        w = np.where(mask, weight[index], 0.0)
        total = w.sum(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(mask, rect[:, index], 0.0)
            y = np.where(mask, human[:, index], 0.0)
            return lam * machine_mean + (w * r).sum(-1) / total, (w * y).sum(-1) / total

    hybrid, human_only = both(units)
    resamples = units[rng.integers(0, len(units), size=(draws, len(units)))]
    pairs = [both(index) for index in resamples]
    return (
        hybrid,
        human_only,
        np.array([p[0] for p in pairs]),
        np.array([p[1] for p in pairs]),
    )


def turn_bootstrap(
    *, a: np.ndarray, b: np.ndarray, draws: int = BOOTSTRAP_DRAWS, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(draws, runs) bootstrap draws of every run's mean score under two judges, the turns resampled with
    replacement and the same resample for both (so the two rankings move together, as `tau_interval`
    needs). `a`, `b` (runs, turns): per-turn scores, NaN where that judge did not assess the turn; a run's
    mean is over the judge's turns in the resample, as its score is over the judge's turns."""
    turns = a.shape[1]
    index = np.random.default_rng(seed).integers(0, turns, size=(draws, turns))
    weight = np.zeros((draws, turns))
    np.add.at(weight, (np.repeat(np.arange(draws), turns), index.ravel()), 1.0)

    def means(scores: np.ndarray) -> np.ndarray:
        present = ~np.isnan(scores)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray((weight @ np.where(present, scores, 0.0).T) / (weight @ present.T))

    return means(a), means(b)


def tau_over_turns(
    *,
    runs: list[str],
    x: np.ndarray,
    y: np.ndarray,
    per_turn_a: Mapping[str, Mapping[str, float]],
    per_turn_b: Mapping[str, Mapping[str, float]],
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any] | None:
    """Tau-b between run scores `x` and `y` (each run's mean over its judge's turns) with its percentile
    interval from `turn_bootstrap`, for `rank_agreement`; None where a run lacks per-turn scores under
    either judge (the measure is not a mean over turns) or the interval is undefined."""
    if not all(run in per_turn_a and run in per_turn_b for run in runs):
        return None
    turns = sorted({t for scores in (per_turn_a, per_turn_b) for run in runs for t in scores[run]})
    if not turns:
        return None
    a, b = (
        np.array([[s[run].get(t, np.nan) for t in turns] for run in runs]) for s in (per_turn_a, per_turn_b)
    )
    draws_a, draws_b = turn_bootstrap(a=a, b=b, seed=seed)
    found = tau_interval(hybrid=x, human=y, hybrid_draws=draws_a, human_draws=draws_b, alpha=alpha)
    if found is None:
        return None
    return {
        "ci": [found.lo, found.hi],
        "confidence": 1 - alpha,
        "interval": "percentile bootstrap over turns",
        "turns": len(turns),
        "draws": found.draws,
        "seed": seed,
    }
