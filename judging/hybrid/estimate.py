"""Each run's hybrid estimate under a stored human sample: the sample's units and probabilities read
from the database, the estimate computed by `judging.measures.hybrid.estimate` (whose docstring says which
human labels count)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from core.wording import plural
from judging.measures.hybrid.coverage import Coverage, turn_coverage
from judging.measures.hybrid.estimate import Draw, HybridEstimate, labelled_draw, runs_estimate
from judging.measures.hybrid.estimators import EstimationError
from judging.measures.hybrid.table import UnitTable
from judging.models import HumanSample


def sample_draw(*, table: UnitTable, sample: HumanSample | None) -> Draw:
    """The units of `table` that `sample` drew, with their probabilities; without a sample, every
    human-labelled unit."""
    if sample is None:
        return labelled_draw(table)
    drawn = dict(sample.units.values_list("key", "inclusion_probability"))
    mask = np.array([k in drawn for k in table.keys])
    pi = np.array([drawn.get(k, 1.0) for k in table.keys])
    lost = len(set(drawn) - set(table.keys))
    design = (
        f"sample {sample.name}: {sample.get_strategy_display().lower()}, {plural(len(drawn), 'unit')} drawn"
    )
    if lost:
        design += f" ({lost} no longer among the machine-labelled units)"
    # A stratified sample's probabilities differ between strata: weighting by them keeps it unbiased.
    weighted = sample.strategy in (HumanSample.Strategy.UNCERTAINTY, HumanSample.Strategy.STRATIFIED)
    return Draw(mask, pi if weighted else None, design)


def hybrid_estimate(
    *,
    table: UnitTable,
    method: str,
    alpha: float = 0.05,
    sample: HumanSample | None = None,
    pairs: bool = True,
    fpc: bool = False,
    coverage: Callable[..., Coverage | None] = turn_coverage,
) -> HybridEstimate:
    """Every run's interval under `method` on the units `sample` drew (without one, every human-labelled
    unit), and (with `pairs`) every pair's difference; `fpc`: with the finite-population correction.
    `coverage` simulates the setting on the same data (`coverage.turn_coverage`): the result warns when
    its worst run is under the floor."""
    if sample is not None and sample.strategy in (
        HumanSample.Strategy.STRATIFIED,
        HumanSample.Strategy.TWO_STAGE,
    ):
        # The uniform and weighted methods here ignore the strata; no stratified estimator of a pooled
        # share is built, so the sample is refused rather than estimated as if it were uniform.
        raise EstimationError(
            f"sample {sample.name} is {sample.get_strategy_display().lower()}: it serves P@k (and nDCG@k, "
            f"two-stage) through estimate --unit pair; {table.measure} has no estimator for it: draw a "
            "uniform or uncertainty sample"
        )
    draw = sample_draw(table=table, sample=sample)
    result = runs_estimate(table=table, method=method, draw=draw, alpha=alpha, pairs=pairs, fpc=fpc)
    result.coverage = coverage(table=table, drawn=draw.drawn, pi=draw.pi, method=method, alpha=alpha, fpc=fpc)
    return result
