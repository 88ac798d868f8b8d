"""How often the interval just printed would hold the truth, simulated on the user's own data.

`estimate` prints an interval whose nominal level holds only asymptotically; at small samples, with
active sampling's uneven weights or with the finite-population correction near a census, the level can
fall well short. Rather than a table measured once on another collection, every estimate is followed by
a small simulation of the same setting (design, measure, method, sample size, `--fpc`) on a population
built from the user's data, and the output warns, with the figure, where the worst run's simulated
coverage is under `COVERAGE_FLOOR`:

* whole turns (`turn_coverage`): a bootstrap population. The N machine-labelled units are refilled by
  drawing, with weights 1/π, among the human-labelled drawn units, each bringing its own human and machine
  values for every run, so the joint spread of human and machine values is the sample's own. The sample
  size, the method and `--fpc` are the estimate's; `simulation.simulate` draws and estimates.
* pairs (`pair_coverage`): every pair keeps its machine grade, and its human grade is drawn from the
  human grades seen on the drawn pairs of its design stratum (machine grade x rank band; a stratum with
  no drawn pair falls back to its machine grade, then to the machine's grade itself).
  `pair_simulation.simulate_pairs` (stratified or uniform) or `two_stage.simulate_two_stage` draws the
  same number of pairs.

Both are Monte Carlo figures over `REPEATS` samples (Monte Carlo error about ±0.02 at 0.90).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from core.wording import plural
from judging.measures.hybrid.active import correction_from_machine
from judging.measures.hybrid.estimators import EstimationError
from judging.measures.hybrid.intervals import measure_bounds
from judging.measures.hybrid.pair_simulation import simulate_pairs
from judging.measures.hybrid.pairs import PairPopulation, design_strata
from judging.measures.hybrid.ranked import RankedMeasure, design_value
from judging.measures.hybrid.simulation import SimulationResult, simulate
from judging.measures.hybrid.table import UnitTable
from judging.measures.hybrid.two_stage import simulate_two_stage

COVERAGE_FLOOR = 0.90
# The simulated figure is itself an estimate (about ±0.02 of Monte Carlo error at 0.90) and a population
# rebuilt from 20-40 drawn turns misses the low tail they did not see, so it reads high near the floor:
# the output warns below this guard, a little above the floor it protects.
WARN_BELOW = 0.94
REPEATS = 200
PAIR_REPEATS = 60
TWO_STAGE_REPEATS = 60


@dataclass(frozen=True)
class Coverage:
    """The simulated coverage of one setting: the worst run's and the mean over runs."""

    worst: float
    mean: float
    repeats: int
    how: str

    @property
    def warned(self) -> bool:
        return self.worst < WARN_BELOW

    def warning(self) -> str | None:
        """The line the output prints when the worst run's coverage is under the floor."""
        if not self.warned:
            return None
        return (
            f"simulated coverage of these intervals on this data is {self.worst:.3f} for the worst run "
            f"(mean {self.mean:.3f}, {plural(self.repeats, 'simulated sample')}, {self.how}), under "
            f"{WARN_BELOW:.2f} (the {COVERAGE_FLOOR:.2f} floor with a margin for the simulation's own error): "
            "read them as narrower than their level"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "worst_run": self.worst,
            "mean": self.mean,
            "repeats": self.repeats,
            "how": self.how,
            "warned": self.warned,
        }


def _from_result(result: SimulationResult, method: str, how: str) -> Coverage | None:
    """The worst run's coverage of `method` at the one budget simulated."""
    if not result.budgets:
        return None
    figures = next(iter(result.budgets.values()))[method]
    return Coverage(worst=figures.worst_run_coverage, mean=figures.coverage, repeats=result.repeats, how=how)


def turn_coverage(
    *,
    table: UnitTable,
    drawn: np.ndarray,
    pi: np.ndarray | None,
    method: str,
    alpha: float,
    fpc: bool,
    repeats: int = REPEATS,
    seed: int = 0,
) -> Coverage | None:
    """The simulated coverage of `method` on whole units at the estimate's sample size (`drawn`, a mask
    over the table's units, `pi` their inclusion probabilities); None where nothing can be simulated
    (fewer than 2 fully labelled drawn units, or a sample that is every unit)."""
    present = ~np.any(np.isnan(table.machine), axis=0)
    labelled = drawn & present & ~np.any(np.isnan(table.human), axis=0)
    donors = np.flatnonzero(labelled)
    big_n = int(present.sum())
    n = len(donors)
    if n < 2 or n >= big_n:
        return None
    rng = np.random.default_rng(seed)
    weight = 1.0 / pi[donors] if pi is not None else np.ones(n)
    refill = rng.choice(donors, size=big_n, p=weight / weight.sum())
    truth, machine = table.human[:, refill], table.machine[:, refill]
    varies = (np.ptp(truth, axis=1) > 0) | (np.ptp(machine, axis=1) > 0)
    if not varies.any():
        return None
    try:
        result = simulate(
            truth=truth,
            machine=machine,
            budgets=[n],
            repeats=repeats,
            seed=seed,
            alpha=alpha,
            # The active design's probabilities when the sample had them; a uniform sample stays uniform.
            uncertainty=correction_from_machine(machine) if method == "active" and pi is not None else None,
            methods=[method],
            fpc=fpc,
            bounds=measure_bounds(table.measure),
        )
    except EstimationError:
        return None
    return _from_result(result, method, f"bootstrap population of the {plural(n, 'labelled unit')}")


def pseudo_grades(
    population: PairPopulation, measure: RankedMeasure, drawn: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A human grade for every pair, drawn from the human grades seen on the drawn pairs of the same design
    stratum (machine grade x whether some run ranks it within the cutoff); else of the same machine grade;
    else the machine's own grade. Within a machine grade the pairs the runs rank high are the relevant
    ones far more often: one confusion matrix for all would make the unranked pairs relevant too, a
    population unlike any collection's (the two-stage design's ideal DCG then runs far off)."""
    strata = design_strata(population.machine, value=design_value(population, measure))[0]
    grades = population.machine.astype(float).copy()
    seen = drawn[~np.isnan(population.human[drawn])]
    for groups in (population.machine, strata):
        for group in np.unique(groups):
            here = groups == group
            pool = population.human[seen][groups[seen] == group]
            if len(pool):
                grades[here] = rng.choice(pool, size=int(here.sum()))
    return grades


def pair_coverage(
    *,
    population: PairPopulation,
    measure: RankedMeasure,
    drawn: np.ndarray,
    method: str,
    alpha: float,
    design: str,
    budget: int | None = None,
    repeats: int | None = None,
    seed: int = 0,
) -> Coverage | None:
    """The simulated coverage of a pair design ("stratified", "uniform" or "two-stage") at the estimate's
    number of drawn pairs (`drawn`, their positions; `budget`, the two-stage sample's budget); None for AP
    (its bootstrap is too slow to simulate here) or a census."""
    if measure.name == "AP" or len(drawn) < 2 or len(drawn) >= population.size:
        return None
    rng = np.random.default_rng(seed)
    pseudo = replace(population, human=pseudo_grades(population, measure, drawn, rng))
    how = f"the machine's grades with human grades from the sample's confusion matrix ({design} design)"
    try:
        if design == "two-stage":
            result = simulate_two_stage(
                population=pseudo,
                measure=measure,
                budgets=[budget or len(drawn)],
                repeats=repeats or TWO_STAGE_REPEATS,
                seed=seed,
                alpha=alpha,
                methods=[method],
            )
        else:
            result = simulate_pairs(
                population=pseudo,
                measure=measure,
                budgets=[len(drawn)],
                repeats=repeats or PAIR_REPEATS,
                seed=seed,
                alpha=alpha,
                design=design,
                methods=[method],
            )
    except EstimationError:
        return None
    return _from_result(result, method, how)
