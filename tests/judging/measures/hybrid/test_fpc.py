"""The finite-population correction: design-based intervals for the mean over exactly the N units.

On a small population sampled at half its size, the default (ppi_py, infinite-population) intervals
cover far more than 95%; the corrected ones cover close to 95% and are narrower.
"""

import numpy as np
import pytest

from judging.measures.hybrid.estimators import fpc_interval, mean_interval

N, n, REPEATS = 120, 60, 1000


def population(seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 3, N)
    machine = np.clip(0.8 * truth + 0.15 + rng.normal(0, 0.12, N), 0, 1)
    return truth, machine


def coverage(method, *, fpc, seed=1, poisson=False):
    truth, machine = population()
    target = truth.mean()
    rng = np.random.default_rng(seed)
    pi = np.clip(0.25 + np.abs(truth - machine) / np.abs(truth - machine).mean() * 0.3, 0.05, 1.0)
    hits, width = 0, 0.0
    for _ in range(REPEATS):
        if poisson:
            drawn = rng.random(N) < pi
            kwargs = {"pi": pi[drawn]}
        else:
            drawn = rng.choice(N, n, replace=False)
            kwargs = {}
        e = mean_interval(
            y=truth[drawn], yhat=machine[drawn], yhat_all=machine, method=method, fpc=fpc, **kwargs
        )
        hits += e.lo <= target <= e.hi
        width += e.width
    return hits / REPEATS, width / REPEATS


@pytest.mark.parametrize("method", ["classical", "ppi", "ppi++"])
def test_corrected_intervals_of_a_half_sample_cover_close_to_95_percent_and_are_narrower(method):
    corrected, corrected_width = coverage(method, fpc=True)
    default, default_width = coverage(method, fpc=False)

    assert 0.92 <= corrected <= 0.975  # Monte Carlo standard error about 0.007
    assert default > 0.98  # conservative without the correction
    assert corrected_width < 0.8 * default_width


def test_corrected_weighted_intervals_of_a_poisson_sample_cover_close_to_95_percent():
    corrected, corrected_width = coverage("active", fpc=True, poisson=True)
    default, default_width = coverage("active", fpc=False, poisson=True)

    assert 0.92 <= corrected <= 0.975
    assert default > 0.98
    assert corrected_width < default_width


def test_the_classical_correction_is_the_textbook_factor():
    truth, machine = population()
    idx = np.random.default_rng(2).choice(N, n, replace=False)
    y, yhat = truth[idx], machine[idx]

    plain = mean_interval(y=y, yhat=yhat, yhat_all=machine, method="classical")
    corrected = mean_interval(y=y, yhat=yhat, yhat_all=machine, method="classical", fpc=True)

    assert corrected.estimate == pytest.approx(plain.estimate)
    # Both use S^2 (n - 1) and Student's quantile: only the factor 1 - n/N differs.
    assert corrected.width / plain.width == pytest.approx(np.sqrt(1 - n / N))


def test_a_census_has_no_sampling_error():
    truth, machine = population()
    everything = np.arange(N)
    for pi in (None, np.ones(N)):
        estimate, se, _lam = fpc_interval(
            y=truth, yhat=machine[everything], yhat_all=machine, lam=None, pi=pi
        )
        assert estimate == pytest.approx(truth.mean())
        assert se == pytest.approx(0.0, abs=1e-12)


def test_the_corrected_point_estimate_is_ppi_pys_difference_estimator_for_a_fixed_weight():
    from ppi_py import ppi_mean_pointestimate

    truth, machine = population()
    idx = np.random.default_rng(3).choice(N, n, replace=False)
    for lam in (0.0, 0.5, 1.0):
        estimate, _se, _lam = fpc_interval(y=truth[idx], yhat=machine[idx], yhat_all=machine, lam=lam)
        expected = ppi_mean_pointestimate(truth[idx], machine[idx], machine, lam=lam)
        assert estimate == pytest.approx(float(np.ravel(expected)[0]))
