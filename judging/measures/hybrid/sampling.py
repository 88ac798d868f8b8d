"""Which units people judge: a uniform sample of fixed size, or one drawn where the machine is least sure.

The uncertainty strategy draws each unit independently (Poisson sampling) with probability proportional
to the machine's uncertainty about it, mixed with a uniform share so that no unit has probability zero
(an estimate weighted by 1/pi needs every unit to be reachable), capped at 1, and scaled so that the
expected sample size is the budget. The probability of each drawn unit is stored with the sample: the
weighted estimators need it.

Uncertainty comes from the machine judge's own confidence where Assay has one, else from the spread
between several machine judges on the same unit (`disagreement`). Drawing proportional to the expected
size of the error |Y - Yhat| is what makes the weighted estimate narrower than a uniform one.
"""

from __future__ import annotations

import warnings

import numpy as np

from core.wording import plural

STRATEGIES = ("uniform", "uncertainty")
UNIFORM_SHARE = 0.2


class SamplingError(ValueError):
    """The sample cannot be drawn as asked (a budget larger than the population, ...)."""


def inclusion_probabilities(
    *, uncertainty: np.ndarray | None, budget: int, uniform_share: float = UNIFORM_SHARE
) -> np.ndarray:
    """Each unit's probability of being drawn, summing to `budget`.

    Proportional to `(1 - uniform_share) * uncertainty / mean(uncertainty) + uniform_share`, capped at 1
    with the excess spread over the other units. Without uncertainty (or with none anywhere), uniform.
    """
    if uncertainty is None:
        raise SamplingError("inclusion probabilities need an uncertainty per unit")
    u = np.clip(np.nan_to_num(np.asarray(uncertainty, dtype=float)), 0.0, None)
    size = len(u)
    if not 0 < budget <= size:
        raise SamplingError(f"the budget must lie between 1 and the {plural(size, 'unit')}, not {budget}")
    if not 0 < uniform_share <= 1:
        raise SamplingError(f"the uniform share must be in (0, 1], not {uniform_share}")
    if u.sum() <= 0:
        return np.full(size, budget / size)
    weight = (1 - uniform_share) * u / u.mean() + uniform_share
    pi = np.zeros(size)
    free = np.ones(size, dtype=bool)
    # Capping at 1 and rescaling the rest converges in at most `size` rounds (each caps one unit or more).
    for _ in range(size):
        remaining = budget - (~free).sum()
        pi[free] = weight[free] * remaining / weight[free].sum()
        over = free & (pi >= 1)
        if not over.any():
            break
        pi[over] = 1.0
        free &= ~over
    return np.clip(pi, 1e-12, 1.0)


def draw(
    *, size: int, budget: int, strategy: str, uncertainty: np.ndarray | None, seed: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the drawn units, their inclusion probabilities).

    uniform: exactly `budget` units, each with probability budget/size. uncertainty: each unit on its own
    with `inclusion_probabilities`, so the sample size is `budget` on average.
    """
    if strategy not in STRATEGIES:
        raise SamplingError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if not 0 < budget <= size:
        raise SamplingError(f"the budget must lie between 1 and the {plural(size, 'unit')}, not {budget}")
    rng = np.random.default_rng(seed)
    if strategy == "uniform":
        chosen = np.sort(rng.choice(size, size=budget, replace=False))
        return chosen, np.full(budget, budget / size)
    if uncertainty is None:
        raise SamplingError(
            "the uncertainty strategy needs the machine's confidence: give other machine judges to compare "
            "with (their disagreement is the uncertainty), or use the uniform strategy"
        )
    pi = inclusion_probabilities(uncertainty=uncertainty, budget=budget)
    chosen = np.flatnonzero(rng.random(size) < pi)
    return chosen, pi[chosen]


def disagreement(*, machine: np.ndarray, others: list[np.ndarray]) -> np.ndarray:
    """Per-unit uncertainty from other machine judges: the root mean square, over the other judges and the
    runs, of their difference from the machine judge. `machine` and each of `others` are (runs, units)."""
    if not others:
        raise SamplingError("disagreement needs at least one other machine judge")
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a unit no other judge labelled: NaN, filled below
        squares = [np.nanmean((np.asarray(o, dtype=float) - machine) ** 2, axis=0) for o in others]
        spread = np.sqrt(np.nanmean(squares, axis=0))
    # A unit no other judge labelled gets the typical uncertainty, neither favoured nor starved.
    known = ~np.isnan(spread)
    return np.where(known, spread, spread[known].mean() if known.any() else 1.0)
