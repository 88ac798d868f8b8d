"""How wide the pair design's intervals are, and how often they hold the truth, for a given number of human pairs.

As `simulation` does for turns: the human grades present are the full truth; for each budget, `repeats`
samples are drawn with the design (stratified by the machine's grade, Neyman allocation from the spread of
the human grades present, which is the pilot a later sample would have; or uniform), every method's
interval is computed for every run with `ranked` (the code `estimate` runs), and the share of intervals
holding the run's true score is counted. Samples are drawn and estimated in blocks of repeats at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from core.wording import plural
from judging.measures.hybrid.estimators import EstimationError, small_sample_warning
from judging.measures.hybrid.figures import method_figures
from judging.measures.hybrid.intervals import interval_ends
from judging.measures.hybrid.pairs import PairPopulation, design_strata, neyman_allocation, pilot_spreads
from judging.measures.hybrid.ranked import (
    PAIR_METHODS,
    RankedMeasure,
    coefficients,
    design_value,
    informative_warning,
    layout_for,
    ranked_estimates,
    true_scores,
)
from judging.measures.hybrid.simulation import SimulationResult

BLOCK = 4_000_000  # elements of (repeats x pairs) per block of draws


def allocation_for(
    population: PairPopulation, *, measure: RankedMeasure, budget: int, design: str, neyman: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(stratum of every pair, pairs to draw per stratum) for `design`."""
    if design == "uniform":
        return np.zeros(population.size, dtype=np.int64), np.array([budget])
    strata, names, worth = design_strata(population.machine, value=design_value(population, measure))
    sizes = np.bincount(strata, minlength=len(names))
    spreads = (
        pilot_spreads(strata=strata, count=len(names), human=population.human)
        if neyman
        else np.ones(len(names))
    )
    return strata, neyman_allocation(sizes=sizes, spreads=spreads * worth, budget=budget)


def draw_block(rng: np.random.Generator, strata: np.ndarray, counts: np.ndarray, reps: int) -> np.ndarray:
    """(reps, n) pair indices: counts[h] drawn without replacement from stratum h, columns by stratum."""
    parts = []
    for h, n_h in enumerate(counts):
        members = np.flatnonzero(strata == h)
        if n_h == 0:
            continue
        keys = rng.random((reps, len(members)))
        pick = np.argpartition(keys, n_h - 1, axis=1)[:, :n_h] if n_h < len(members) else None
        parts.append(members[pick] if pick is not None else np.broadcast_to(members, (reps, len(members))))
    return np.concatenate(parts, axis=1)


def _informative_warning(
    population: PairPopulation, measure: RankedMeasure, strata: np.ndarray, counts: np.ndarray
) -> str | None:
    """The warning `estimate` gives when a run's expected number of drawn pairs within its cutoff is
    below the minimum (for the run with the fewest)."""
    pi = (counts / np.maximum(np.bincount(strata, minlength=len(counts)), 1))[strata]
    expected = ((coefficients(population, measure) > 0) * pi).sum(1)
    return informative_warning(math.floor(float(expected.min())), measure)


def simulate_pairs(
    *,
    population: PairPopulation,
    measure: RankedMeasure,
    budgets: Sequence[int],
    repeats: int,
    seed: int = 0,
    alpha: float = 0.05,
    design: str = "stratified",
    methods: Sequence[str] = PAIR_METHODS,
    neyman: bool = True,
) -> SimulationResult:
    """Coverage and width of each pair method's interval for every run and budget (human pairs)."""
    if np.isnan(population.human).any():
        raise EstimationError("the simulation needs a human grade on every pair (use population.complete())")
    if measure.name == "AP":
        raise EstimationError(
            "the single-stage pair simulation serves P@k: AP is offered from the two-stage design only "
            "(two_stage.simulate_two_stage)"
        )
    unknown = [m for m in methods if m not in PAIR_METHODS]
    if unknown:
        raise EstimationError(f"methods must be among {', '.join(PAIR_METHODS)}, not {', '.join(unknown)}")
    big_n = population.size
    bad = [b for b in budgets if not 2 <= b <= big_n]
    if bad:
        raise EstimationError(f"budgets must lie between 2 and the {plural(big_n, 'pair')}, not {bad}")
    truth = true_scores(population, measure, population.human)
    rng = np.random.default_rng(seed)
    k = len(population.runs)
    result = SimulationResult(units=big_n, runs=k, repeats=repeats, alpha=alpha, seed=seed)
    wanted = list(dict.fromkeys(["classical", *methods]))
    for budget in sorted(set(budgets)):
        strata, counts = allocation_for(
            population, measure=measure, budget=budget, design=design, neyman=neyman
        )
        layout = layout_for(strata, counts)
        # Student's t on the drawn pairs that move each run's score (its expected count): the rest add
        # nothing to the spread.
        pi = (counts / np.maximum(np.bincount(strata, minlength=len(counts)), 1))[strata]
        moving = coefficients(population, measure) > 0
        df_pairs = np.maximum((moving * pi).sum(1), 2)[:, None]
        # A run whose every pair within the cutoff is drawn is known exactly (for P@k; nDCG's ideal DCG
        # also needs the rest, so only a full census counts there).
        census = (budget == big_n) | ((measure.name == "P") & np.all(~moving | (pi >= 1), axis=1)[:, None])
        hits = {m: np.zeros(k) for m in wanted}
        widths = {m: np.zeros(k) for m in wanted}
        chunk = max(1, min(repeats, BLOCK // max(big_n, 1)))
        done = 0
        while done < repeats:
            size = min(chunk, repeats - done)
            done += size
            idx = draw_block(rng, strata, counts, size)
            y = population.human[idx]
            for method in wanted:
                got = ranked_estimates(
                    population=population, measure=measure, layout=layout, idx=idx, y=y, method=method
                )
                est, lo, hi, _w = interval_ends(
                    estimate=got.estimate,
                    se=got.se,
                    se_srs=got.se,
                    n=df_pairs,
                    binary=False,
                    identical=np.ptp(y, axis=1)[None, :] == 0,
                    census=census,
                    alpha=alpha,
                    bounds=(0.0, 1.0),
                )
                hits[method] += ((lo - 1e-12 <= truth[:, None]) & (truth[:, None] <= hi + 1e-12)).sum(1)
                widths[method] += (hi - lo).sum(1)
        warning = small_sample_warning(n=budget) or _informative_warning(population, measure, strata, counts)
        if warning:
            result.warnings[budget] = warning
        result.budgets[budget] = method_figures(
            hits={m: hits[m] for m in methods}, widths=widths, repeats=repeats, warning=warning
        )
    return result
