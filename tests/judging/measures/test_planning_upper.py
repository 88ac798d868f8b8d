"""The plan sizes from the pilot's upper variance bound: the factor against scipy's chi-square and
kurtosis, and a plan at least as large as the one from the pilot's variance itself."""

import numpy as np
import pytest
from scipy.stats import chi2, kurtosis

from judging.measures.hybrid.planning import plan_budget, variance_upper_factor
from judging.measures.hybrid.table import UnitTable


@pytest.mark.parametrize("seed", range(4))
def test_the_upper_factor_is_chi_square_with_kurtosis_lowered_degrees_of_freedom(seed):
    values = np.random.default_rng(seed).integers(0, 4, 30).astype(float) ** 2
    n, excess = len(values), max(kurtosis(values, fisher=True, bias=True), 0.0)
    df = 2 / (2 / (n - 1) + excess / n)
    assert variance_upper_factor(values, 0.9) == pytest.approx(df / chi2.ppf(0.1, df))
    assert variance_upper_factor(values, 0.9) > 1


def test_a_plan_from_the_upper_bound_is_at_least_the_plan_from_the_pilots_variance():
    rng = np.random.default_rng(3)
    units = 400
    human = np.clip(np.linspace(0.3, 0.7, 3)[:, None] + rng.normal(0, 0.25, (3, units)), 0, 1)
    machine = np.clip(human + rng.normal(0, 0.2, (3, units)), 0, 1)
    human[:, 25:] = np.nan
    table = UnitTable(
        task="relevance",
        measure="nDCG@5",
        unit="turn",
        keys=[str(i) for i in range(units)],
        runs=["a", "b", "c"],
        machine=machine,
        human=human,
    )
    old = plan_budget(table=table, target_width=0.15, pilot_upper=None).as_json()
    new = plan_budget(table=table, target_width=0.15).as_json()
    assert new["budget_for_width"] > old["budget_for_width"]
    assert new["pilot_upper"] == 0.9 and old["pilot_upper"] is None
    assert "sized from the 90% upper bound of each run's variance" in new["width_plan"]
