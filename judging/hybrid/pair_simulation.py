"""The budget page's simulation of the pair design on a collection: its human-graded pairs read from the
database, simulated by `judging.measures.hybrid.pair_simulation` (or the two-stage design's)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from annotation.models import Collection, Judge
from core.wording import plural
from judging.hybrid.pair_estimate import pair_population_for
from judging.measures.hybrid.estimators import EstimationError
from judging.measures.hybrid.pair_simulation import simulate_pairs
from judging.measures.hybrid.ranked import check_offered, parse_ranked
from judging.measures.hybrid.simulation import BudgetSimulation
from judging.measures.hybrid.table import UnitTable
from judging.measures.hybrid.two_stage import simulate_two_stage


def pair_budget_simulate(
    *,
    collection: Collection,
    human: list[Judge],
    machine: Judge,
    measure: str,
    budgets: Sequence[int],
    repeats: int,
    alpha: float = 0.05,
    design: str = "stratified",
) -> BudgetSimulation:
    """`simulate_pairs` (or, for `design` two-stage, `two_stage.simulate_two_stage`) over a collection's
    human-graded pairs, shaped as `simulation.budget_simulate`'s result for the budget page: budgets above
    the graded pairs are left out and named."""
    parsed = parse_ranked(measure)
    two_stage = design == "two-stage"
    check_offered(parsed, two_stage=two_stage)
    population = pair_population_for(collection=collection, human=human, machine=machine).complete()
    usable = sorted({b for b in budgets if 2 <= b <= population.size})
    if not usable:
        raise EstimationError(
            f"budgets must lie between 2 and the {plural(population.size, 'human-graded pair')}"
        )
    simulate = simulate_two_stage if two_stage else simulate_pairs
    result = simulate(population=population, measure=parsed, budgets=usable, repeats=repeats, alpha=alpha)
    empty = np.zeros((len(population.runs), population.size))
    table = UnitTable(
        task="relevance",
        measure=measure,
        unit="pair",
        keys=population.keys,
        runs=population.runs,
        machine=empty,
        human=empty,
    )
    return BudgetSimulation(
        table=table,
        result=result,
        left_out=sorted({b for b in budgets if b > population.size}),
        active_sampling="none: two-stage pairs (turns, then each drawn turn's top-k census and a few others)"
        if two_stage
        else "none: stratified pairs (machine grade x rank band, Neyman allocation)",
    )
