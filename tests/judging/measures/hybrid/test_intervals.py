"""The interval rules: Student's t, Wilson for yes/no labels, the measure's range, zero width only for a
census, the small-sample warning; each checked against an independent computation and by coverage on a
synthetic population with a fixed seed."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from judging.measures.hybrid.estimators import MIN_UNITS, mean_interval
from judging.measures.hybrid.intervals import measure_bounds
from judging.measures.hybrid.simulation import simulate


def share_population(*, size=3000, share=0.07, flip=0.1, seed=0):
    """Yes/no human labels with a rare yes, and a machine that flips a tenth of them."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(size) < share).astype(float)
    machine = np.where(rng.random(size) < flip, 1 - truth, truth)
    return truth[None], machine[None]


@pytest.mark.parametrize("ones", [0, 1, 3, 10, 19, 20])
def test_it_gives_wilsons_interval_for_yes_no_labels(ones):
    y = np.r_[np.ones(ones), np.zeros(20 - ones)]

    e = mean_interval(y=y, yhat=y, yhat_all=np.r_[y, y], method="classical")

    assert e.rule == "wilson"
    assert (e.lo, e.hi) == pytest.approx(proportion_confint(ones, 20, alpha=0.05, method="wilson"), abs=1e-12)


def test_it_gives_students_interval_for_graded_values():
    y = np.random.default_rng(1).beta(2, 3, 12)

    e = mean_interval(y=y, yhat=y, yhat_all=np.r_[y, y], method="classical")

    assert e.rule == "t"
    assert (e.lo, e.hi) == pytest.approx(stats.t.interval(0.95, 11, loc=y.mean(), scale=stats.sem(y)))


def test_it_never_gives_five_identical_labels_a_zero_width_interval_unless_they_are_a_census():
    y = np.zeros(5)
    for method in ("classical", "ppi", "ppi++", "active"):
        e = mean_interval(y=y, yhat=y, yhat_all=np.r_[y, np.zeros(90), np.ones(5)], method=method)
        assert 0.0 <= e.lo < 0.01
        assert e.hi > 0.3, method  # Wilson's upper end for 0 of 5 is 0.43

    graded = np.full(5, 0.4)  # not yes/no, all the same: the bounded value's widest variance
    e = mean_interval(y=graded, yhat=graded, yhat_all=np.r_[graded, graded], method="classical")
    assert e.hi - e.lo > 0.3

    census = mean_interval(y=y, yhat=y, yhat_all=y, method="ppi++", fpc=True)
    assert (census.lo, census.hi, census.rule, census.warning) == (0.0, 0.0, "census", None)


def test_it_clips_the_interval_to_the_measures_range():
    y = np.array([1.0, 1.0, 1.0, 0.9, 1.0, 0.8])  # P@10 near 1: Student's upper end is above 1

    clipped = mean_interval(y=y, yhat=y, yhat_all=np.r_[y, y], method="classical")
    raw = mean_interval(y=y, yhat=y, yhat_all=np.r_[y, y], method="classical", bounds=None)

    assert raw.hi > 1.0
    assert clipped.hi == 1.0 and clipped.lo == pytest.approx(raw.lo)
    assert measure_bounds("P(rel=2)@10") == (0.0, 1.0)
    assert measure_bounds("nDCG@5", difference=True) == (-1.0, 1.0)
    assert measure_bounds("NumRet") is None


def test_it_warns_below_30_units_or_5_of_the_rarer_answer():
    rng = np.random.default_rng(2)
    graded = rng.random(MIN_UNITS)
    assert mean_interval(y=graded, yhat=graded, yhat_all=graded, method="ppi++").warning is None
    few = mean_interval(y=graded[:29], yhat=graded[:29], yhat_all=graded, method="ppi++").warning
    assert "29 human-labelled units" in few

    rare = np.r_[np.ones(4), np.zeros(96)]
    warning = mean_interval(y=rare, yhat=rare, yhat_all=rare, method="classical").warning
    assert "4 labels of the rarer answer" in warning
    common = np.r_[np.ones(95), np.zeros(5)]  # a share near 1 is as hard as one near 0: 5 of the rarer
    assert mean_interval(y=common, yhat=common, yhat_all=common, method="classical").warning is None


def test_a_rare_share_is_covered_close_to_95_percent_wherever_no_warning_is_given():
    truth, machine = share_population()

    result = simulate(truth=truth, machine=machine, budgets=[20, 100, 200, 400], repeats=2000, seed=1)

    assert set(result.warnings) == {20}  # 20 units, and about 1.4 yes answers
    for budget in (100, 200, 400):
        for method, figures in result.budgets[budget].items():
            assert 0.93 <= figures.coverage <= 0.975, (budget, method, figures.coverage)
            assert figures.mc_error == figures.coverage_mc_se < 0.006
    assert result.budgets[20]["classical"].warning == result.warnings[20]


def test_student_quantiles_cover_better_than_normal_ones_at_small_samples():
    rng = np.random.default_rng(3)
    truth = rng.beta(2, 3, (1, 2000))
    machine = np.clip(0.7 * truth + 0.2 + rng.normal(0, 0.15, truth.shape), 0, 1)

    result = simulate(
        truth=truth, machine=machine, budgets=[8, 30], repeats=3000, seed=4, methods=["classical"]
    )

    # The normal interval on 8 units covers about 0.90 (its quantile 1.96 against Student's 2.36).
    assert result.budgets[8]["classical"].coverage >= 0.935
    assert 0.935 <= result.budgets[30]["classical"].coverage <= 0.97


def test_the_finite_population_correction_covers_on_a_small_population():
    rng = np.random.default_rng(5)
    truth = rng.beta(0.7, 1.5, (3, 43))
    machine = np.clip(0.7 * truth + 0.2 + rng.normal(0, 0.15, truth.shape), 0, 1)

    corrected = simulate(truth=truth, machine=machine, budgets=[30, 43], repeats=3000, seed=6, fpc=True)
    plain = simulate(truth=truth, machine=machine, budgets=[30], repeats=3000, seed=6)

    for method in ("classical", "ppi", "ppi++"):
        figures = corrected.budgets[30][method]
        assert 0.92 <= figures.coverage <= 0.975, (method, figures.coverage)
        assert figures.mean_width < plain.budgets[30][method].mean_width
        assert corrected.budgets[43][method].mean_width == 0.0  # a census
        assert corrected.budgets[43][method].coverage == 1.0
    assert 43 not in corrected.warnings
