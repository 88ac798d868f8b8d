"""Active sampling that pays, or says it does not.

A weighted (Horvitz-Thompson) PPI estimate has the smallest variance when each unit's inclusion probability
is proportional to the size of its human-minus-machine correction, sqrt(E[(Y - Yhat)^2]) (Zrnic and
Candes, active statistical inference). That size is not known before people label, so it is predicted:

* **from a pilot** (human labels on a few units): the mean squared correction among the pilot units whose
  machine value falls in the same bin (quantile bins of the machine value, shrunk towards the overall mean
  so a bin with few pilot units does not get a probability near the floor by chance);
* **from the machine's own label distribution**: a value in [0, 1] read as the machine's probability that
  the human says yes has a correction of size sqrt(yhat * (1 - yhat)) if the machine is calibrated: units
  the machine calls near 0 or 1 need people least.

Several runs share a unit (a turn), so a unit's size is the root mean square over runs. The sampler
(`sampling.inclusion_probabilities`) mixes it with a uniform share, the floor that keeps every unit
reachable. Whether this pays on a collection is an empirical question: `verdict` reads the simulation and
says either at which budgets active sampling is narrower than uniform PPI++ at valid coverage, or that it
is not, and to use the uniform design.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

PILOT_BINS = 5
SHRINK = 2.0  # pilot units' worth of the overall mean added to every bin
# The active design pays at a budget when its mean width is at least this much below uniform PPI++'s ...
GAIN = 0.02
# ... and its coverage is valid: the mean within 2 Monte Carlo errors of nominal or above, and no run more
# than this below nominal.
WORST_RUN_SLACK = 0.05


def correction_from_machine(machine: np.ndarray) -> np.ndarray:
    """Per unit, the correction's predicted size from the machine values alone ((runs, units), NaN where
    absent): sqrt(yhat (1 - yhat)) for values in [0, 1], root mean square over runs."""
    values = np.clip(np.atleast_2d(np.asarray(machine, dtype=float)), 0.0, 1.0)
    with np.errstate(invalid="ignore"):
        spread = values * (1 - values)
        size = np.sqrt(np.nanmean(spread, axis=0)) if values.shape[0] else np.zeros(values.shape[1])
    return np.nan_to_num(size)


def correction_from_pilot(
    *, human: np.ndarray, machine: np.ndarray, bins: int = PILOT_BINS, shrink: float = SHRINK
) -> np.ndarray:
    """Per unit, the correction's predicted size from the pilot: `human` is NaN except on the pilot units.

    For each run, the machine values of the pilot units cut into `bins` quantile bins; a unit's predicted
    squared correction is its bin's mean of (human - machine)^2 over the pilot, shrunk towards the run's
    overall mean by `shrink` units' worth. Root mean square over runs.
    """
    human = np.atleast_2d(np.asarray(human, dtype=float))
    machine = np.atleast_2d(np.asarray(machine, dtype=float))
    predicted = np.full(machine.shape, np.nan)
    for r in range(machine.shape[0]):
        pilot = ~np.isnan(human[r]) & ~np.isnan(machine[r])
        if pilot.sum() < 2:
            continue
        squares = (human[r, pilot] - machine[r, pilot]) ** 2
        overall = float(squares.mean())
        edges = np.unique(np.quantile(machine[r, pilot], np.linspace(0, 1, bins + 1))[1:-1])
        pilot_bin = np.searchsorted(edges, machine[r, pilot], side="right")
        counts = np.bincount(pilot_bin, minlength=len(edges) + 1)
        sums = np.bincount(pilot_bin, weights=squares, minlength=len(edges) + 1)
        by_bin = (sums + shrink * overall) / (counts + shrink)
        present = ~np.isnan(machine[r])
        predicted[r, present] = by_bin[np.searchsorted(edges, machine[r, present], side="right")]
    if np.isnan(predicted).all():
        return np.ones(machine.shape[1])
    with np.errstate(invalid="ignore"):
        size = np.sqrt(np.nanmean(predicted, axis=0))
    typical = float(np.nanmean(size))
    return np.where(np.isnan(size), typical, size)


def uniform_equivalent_n(
    *, y: np.ndarray, se: float, n: int, pi: np.ndarray | None = None, big_n: int | None = None
) -> float:
    """The size of a uniform human-only sample whose interval is as narrow as one with standard error `se`.

    A uniform sample of m units has standard error S / sqrt(m) (times sqrt(1 - m/N) with the
    finite-population correction, `big_n` given), S^2 the human values' variance over all units. S^2 is
    estimated from the sample, weighted by 1/pi when the units were drawn with unequal probabilities:
    the plain variance of such a sample is the variance of the units it favours, not of all units, and
    dividing it by `se` overstated the equivalent size several times over for a sample drawn where the
    machine is unsure (whose human values vary most).
    """
    y = np.asarray(y, dtype=float)
    w = np.ones(len(y)) if pi is None else 1 / np.asarray(pi, dtype=float)
    mean = float((w * y).sum() / w.sum())
    s2 = float((w * (y - mean) ** 2).sum() / w.sum()) * len(y) / max(len(y) - 1, 1)
    if se <= 0:
        return float("inf") if s2 > 0 else float(n)
    if big_n is None:
        return s2 / se**2
    return s2 / (se**2 + s2 / big_n)


@dataclass(frozen=True)
class ActiveVerdict:
    pays: bool
    budgets: list[int]  # where it pays
    width_ratio: dict[int, float]  # active / uniform PPI++ mean width, per budget
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "pays": self.pays,
            "budgets": self.budgets,
            "width_ratio_to_ppi++": {str(b): r for b, r in self.width_ratio.items()},
            "verdict": self.sentence,
        }


def verdict(*, budgets: dict[int, dict[str, Any]], alpha: float) -> ActiveVerdict | None:
    """Whether active sampling beat uniform PPI++ in a simulation (`simulation.SimulationResult.budgets`):
    narrower by at least `GAIN` at valid coverage. None when the simulation lacks either method."""
    nominal = 1 - alpha
    ratios: dict[int, float] = {}
    paying = []
    for budget, methods in budgets.items():
        if "active" not in methods or "ppi++" not in methods:
            return None
        active, uniform = methods["active"], methods["ppi++"]
        ratio = active.mean_width / uniform.mean_width if uniform.mean_width > 0 else math.nan
        ratios[budget] = ratio
        valid = (
            active.coverage >= nominal - 2 * active.mc_error
            and active.worst_run_coverage >= nominal - WORST_RUN_SLACK
        )
        if valid and ratio <= 1 - GAIN:
            paying.append(budget)
    if paying:
        best = min(ratios[b] for b in paying)
        sentence = (
            f"active sampling pays at {'budget' if len(paying) == 1 else 'budgets'} "
            f"{', '.join(map(str, paying))}: intervals down to {best:.2f}x the width of uniform PPI++ at "
            "valid coverage"
        )
    else:
        sentence = (
            "active sampling is not narrower than uniform PPI++ at valid coverage on this collection at any "
            "budget simulated: use the uniform design"
        )
    return ActiveVerdict(pays=bool(paying), budgets=paying, width_ratio=ratios, sentence=sentence)
