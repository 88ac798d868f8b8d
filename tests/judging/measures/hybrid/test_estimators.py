"""Hybrid estimators: equal to ppi_py where ppi_py has the estimator, and the weighted one checked against it."""

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.ppi import _calc_lam_glm
from scipy import stats

from judging.measures.hybrid.estimators import EstimationError, ipw_interval, mean_interval, ppi_plus_plus_lam
from judging.measures.hybrid.sampling import SamplingError, disagreement, draw, inclusion_probabilities
from judging.measures.hybrid.simulation import _active_intervals, _uniform_intervals


def arrays(seed=0, n=150, big_n=3000):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=big_n)
    machine = 0.7 * truth + 0.3 + rng.normal(scale=0.6, size=big_n)
    idx = rng.choice(big_n, n, replace=False)
    return truth[idx], machine[idx], machine


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_equals_ppi_py_for_classical_ppi_and_ppi_plus_plus_with_student_quantiles(seed):
    y, yhat, yhat_all = arrays(seed)
    n = len(y)
    c = mean_interval(y=y, yhat=yhat, yhat_all=yhat_all, method="classical", alpha=0.05, bounds=None)
    assert (c.lo, c.hi) == pytest.approx(stats.t.interval(0.95, n - 1, loc=y.mean(), scale=stats.sem(y)))
    for method, lam in (("ppi", 1), ("ppi++", None)):
        lo, hi = ppi_mean_ci(y, yhat, yhat_all, alpha=0.05, lam=lam)
        point = ppi_mean_pointestimate(y, yhat, yhat_all, lam=lam)
        e = mean_interval(y=y, yhat=yhat, yhat_all=yhat_all, method=method, alpha=0.05, bounds=None)
        assert e.estimate == pytest.approx(float(np.ravel(point)[0]), abs=1e-12)
        # ppi_py's normal interval, its rectifier variance over n - 1, with Student's quantile instead.
        ppi_se = float(np.ravel(hi - lo)[0]) / (2 * stats.norm.ppf(0.975))
        rect_var = np.var(y - e.lam * yhat)
        se = np.sqrt(ppi_se**2 + rect_var / n * (n / (n - 1) - 1))
        assert e.se == pytest.approx(se, rel=1e-9)
        assert (e.lo, e.hi) == pytest.approx(
            (e.estimate - stats.t.ppf(0.975, n - 1) * se, e.estimate + stats.t.ppf(0.975, n - 1) * se)
        )


def test_its_power_tuning_weight_is_ppi_pys():
    y, yhat, yhat_all = arrays(3)
    theta = float(np.ravel(ppi_mean_pointestimate(y, yhat, yhat_all, lam=1))[0])
    expected = _calc_lam_glm(y - theta, yhat - theta, yhat_all - theta, np.eye(1), clip=True)
    assert ppi_plus_plus_lam(y=y, yhat=yhat, yhat_all=yhat_all) == pytest.approx(expected, abs=1e-12)


def test_the_weighted_estimator_with_equal_probabilities_is_ppi_pys_point_estimate():
    y, yhat, yhat_all = arrays(4)
    pi = np.full(len(y), len(y) / len(yhat_all))
    for lam in (0.0, 0.4, 1.0):
        est, se, _ = ipw_interval(y=y, yhat=yhat, pi=pi, yhat_all=yhat_all, lam=lam)
        assert est == pytest.approx(float(np.ravel(ppi_mean_pointestimate(y, yhat, yhat_all, lam=lam))[0]))
        lo, hi = ppi_mean_ci(y, yhat, yhat_all, alpha=0.05, lam=lam)
        # Unit-by-unit sampling adds the squared mean of the rectifier to the variance (the sample size
        # varies), so the widths agree only where that mean is small: here the machine is biased by 0.3.
        assert 2 * 1.959964 * se == pytest.approx(float(np.ravel(hi - lo)[0]), rel=0.01 + 0.08 * lam)


def test_the_weighted_estimator_brute_force_sums():
    rng = np.random.default_rng(5)
    truth, machine = rng.random(400), rng.random(400)
    pi = rng.uniform(0.05, 0.6, 400)
    xi = rng.random(400) < pi
    est, se, lam = ipw_interval(y=truth[xi], yhat=machine[xi], pi=pi[xi], yhat_all=machine, lam=None)
    a = machine * (1 - xi / pi)
    b = truth * xi / pi
    terms = lam * a + b
    assert est == pytest.approx(terms.mean())
    assert se == pytest.approx(terms.std() / np.sqrt(400))
    assert lam == pytest.approx(np.clip(-np.cov(a, b, ddof=0)[0, 1] / a.var(), 0, 1))


@pytest.mark.parametrize("fpc", [False, True])
def test_the_vectorised_simulation_formulas_equal_the_one_shot_estimators(fpc):
    rng = np.random.default_rng(6)
    truth = rng.random((2, 500))
    machine = np.clip(truth + rng.normal(scale=0.2, size=truth.shape), 0, 1)
    idx = rng.choice(500, 60, replace=False)[None, :]
    got = _uniform_intervals(truth[:, idx], machine[:, idx], machine, ["classical", "ppi", "ppi++"], fpc)
    for k in range(2):
        for method, (est, se) in got.items():
            e = mean_interval(
                y=truth[k, idx[0]], yhat=machine[k, idx[0]], yhat_all=machine[k], method=method, fpc=fpc
            )
            assert est[k, 0] == pytest.approx(e.estimate)
            assert se[k, 0] == pytest.approx(e.se)
    pi = inclusion_probabilities(uncertainty=rng.random(500), budget=80)
    xi = (rng.random(500) < pi)[None, :]
    est, se = _active_intervals(xi, truth, machine, pi, fpc)
    for k in range(2):
        sel = xi[0]
        e = mean_interval(
            y=truth[k, sel], yhat=machine[k, sel], yhat_all=machine[k], method="active", pi=pi[sel], fpc=fpc
        )
        assert est[k, 0] == pytest.approx(e.estimate)
        assert se[k, 0] == pytest.approx(e.se)


def test_on_a_weighted_sample_classical_and_ppi_use_the_weights():
    rng = np.random.default_rng(7)
    machine = rng.random(300)
    pi = np.linspace(0.05, 0.9, 300)
    xi = rng.random(300) < pi
    truth = machine + 0.1
    c = mean_interval(y=truth[xi], yhat=machine[xi], yhat_all=machine, method="classical", pi=pi[xi])
    est, _, lam = ipw_interval(y=truth[xi], yhat=machine[xi], pi=pi[xi], yhat_all=machine, lam=0.0)
    assert (c.estimate, c.lam) == (pytest.approx(est), 0.0)
    assert mean_interval(y=truth[xi], yhat=machine[xi], yhat_all=machine, method="ppi", pi=pi[xi]).lam == 1.0


def test_it_rejects_an_unknown_method_and_too_few_labels():
    y, yhat, yhat_all = arrays(8)
    with pytest.raises(EstimationError, match="classical, ppi, ppi\\+\\+, active"):
        mean_interval(y=y, yhat=yhat, yhat_all=yhat_all, method="bayes")
    with pytest.raises(EstimationError, match="at least 2"):
        mean_interval(y=y[:1], yhat=yhat[:1], yhat_all=yhat_all, method="ppi")


def test_inclusion_probabilities_sum_to_the_budget_and_are_never_zero():
    u = np.concatenate([np.zeros(50), np.linspace(0, 5, 150), [1000.0]])
    pi = inclusion_probabilities(uncertainty=u, budget=40)
    assert pi.sum() == pytest.approx(40)
    assert pi.min() > 0 and pi.max() <= 1
    assert pi[-1] == 1.0  # capped, the excess spread over the others
    assert np.all(np.diff(pi[50:-1]) >= 0)


def test_draw_uniform_takes_exactly_the_budget_and_uncertainty_needs_confidence():
    chosen, pi = draw(size=100, budget=10, strategy="uniform", uncertainty=None, seed=1)
    assert len(set(chosen)) == 10 and np.all(pi == 0.1)
    with pytest.raises(SamplingError, match="uncertainty strategy needs"):
        draw(size=100, budget=10, strategy="uncertainty", uncertainty=None, seed=1)
    with pytest.raises(SamplingError, match="uniform, uncertainty"):
        draw(size=100, budget=10, strategy="greedy", uncertainty=None, seed=1)


def test_disagreement_gives_unlabelled_units_the_typical_uncertainty():
    machine = np.array([[0.0, 1.0, 0.5]])
    other = np.array([[1.0, 1.0, np.nan]])
    assert disagreement(machine=machine, others=[other]).tolist() == [1.0, 0.0, 0.5]
