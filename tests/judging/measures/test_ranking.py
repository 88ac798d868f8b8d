"""Rankings with confidence: Holm's settled pairs (against statsmodels), Kendall's tau (against scipy) and
the bound on the hybrid ranking's agreement with the full-judgment ranking (against a brute force over
every true order), in every design, in `estimate`'s text and JSON and on the estimates page."""

import itertools
import json

import numpy as np
import pytest
from django.urls import reverse
from scipy.stats import kendalltau
from scipy.stats import t as student
from statsmodels.stats.multitest import multipletests

from judging.hybrid.estimate import hybrid_estimate
from judging.measures.hybrid.estimate import HybridEstimate, add_pairs
from judging.measures.hybrid.estimators import Estimate
from judging.measures.hybrid.table import UnitTable
from judging.measures.ranking import (
    PairTest,
    holm_reject,
    kendall_tau_b,
    pair_p_value,
    tau_interval,
    tau_lower_bound,
)
from tests.factories import OrganiserFactory
from tests.judging.helpers import BASE, report_page, run


@pytest.mark.parametrize("seed", range(6))
def test_it_settles_the_pairs_statsmodels_holm_rejects(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.02, 4), rng.uniform(0, 1, 11), [0.05 / 15, 0.05 / 14]])
    expected, *_ = multipletests(p, alpha=0.05, method="holm")
    assert holm_reject(p, 0.05).tolist() == expected.tolist()


def test_it_stops_holm_at_the_first_p_value_over_its_threshold():
    # 0.03 > 0.05/2 stops the procedure, so 0.04 (below 0.05) is not rejected either.
    assert holm_reject([0.03, 0.04, 0.001], 0.05).tolist() == [False, False, True]


def test_it_computes_a_pairs_p_value_with_students_t():
    from scipy.stats import t

    se = np.sqrt(0.002)
    assert pair_p_value(difference=0.1, se=se, df=19) == pytest.approx(2 * t.sf(0.1 / se, 19))
    assert pair_p_value(difference=0.0, se=0.0) == 1.0 and pair_p_value(difference=0.1, se=0.0) == 0.0


def test_it_computes_kendalls_tau_b_as_scipy_does_ties_included():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, size=(20, 7)).astype(float)
    y = x + rng.integers(-2, 3, size=(20, 7))
    ours = kendall_tau_b(x, y)
    for row in range(20):
        assert ours[row] == pytest.approx(kendalltau(x[row], y[row]).statistic)


def test_it_gives_no_tau_interval_for_a_ranking_that_is_all_ties():
    ties = np.ones((5, 3))
    assert tau_interval(hybrid=np.ones(3), human=np.arange(3.0), hybrid_draws=ties, human_draws=ties) is None


def _brute_force_bound(estimates, tests, settled, runs):
    """The smallest scipy tau-b over every true ordering of the runs, ties included (scores 0..k-1 for
    each run), in which every settled pair is ordered as its difference says."""
    k = len(runs)
    position = {r: i for i, r in enumerate(runs)}
    worst = np.inf
    for truth in itertools.product(range(k), repeat=k):
        if len(set(truth)) < 2:
            continue
        if all(
            np.sign(truth[position[t.a]] - truth[position[t.b]]) == np.sign(t.difference)
            for t, holm in zip(tests, settled, strict=True)
            if holm
        ):
            worst = min(worst, kendalltau(estimates, truth).statistic)
    return worst


@pytest.mark.parametrize("seed", range(8))
def test_the_tau_bound_is_at_most_the_worst_tau_b_over_every_true_order_the_settled_pairs_allow(seed):
    rng = np.random.default_rng(seed)
    runs = ["a", "b", "c", "d"]
    estimates = rng.integers(0, 3 if seed % 2 else 10, 4).astype(float)
    tests = [
        PairTest(a=x, b=y, difference=float(rng.choice([-1, 1]) * rng.uniform(0.1, 1)), se=0.1, p_value=0.0)
        for x, y in itertools.combinations(runs, 2)
    ]
    # A settled pair's difference agrees with the hybrid order, as it does when the difference is the
    # difference of the two estimates.
    tests = [
        PairTest(
            t.a, t.b, float(estimates[runs.index(t.a)] - estimates[runs.index(t.b)]) or t.difference, 0.1, 0
        )
        for t in tests
    ]
    settled = rng.random(len(tests)) < 0.5
    settled &= np.array([estimates[runs.index(t.a)] != estimates[runs.index(t.b)] for t in tests])
    if len(set(estimates)) < 2:
        return
    ours = tau_lower_bound(estimates=estimates, tests=tests, settled=settled, runs=runs)
    # Counting every unsettled pair against the ranking, pair by pair, may ask for orders no ranking has
    # (they need not be transitive): a bound at or below the worst true order, never above it.
    assert -1 <= ours <= _brute_force_bound(estimates, tests, settled, runs) + 1e-12


def test_every_pair_settled_bounds_tau_at_one_and_none_settled_at_minus_one():
    runs = ["a", "b", "c"]
    estimates = np.array([0.9, 0.5, 0.1])
    tests = [
        PairTest(a, b, estimates[runs.index(a)] - estimates[runs.index(b)], 0.01, 0.0)
        for a, b in itertools.combinations(runs, 2)
    ]
    assert tau_lower_bound(estimates=estimates, tests=tests, settled=np.ones(3, bool), runs=runs) == 1.0
    assert tau_lower_bound(estimates=estimates, tests=tests, settled=np.zeros(3, bool), runs=runs) == -1.0


def test_it_leaves_a_pair_unsettled_when_holm_says_so_though_its_own_interval_excludes_zero():
    rng = np.random.default_rng(13)
    units = 60
    base = rng.uniform(0.2, 0.8, units)
    # Five runs a step apart: adjacent pairs are borderline, so with 10 pairs Holm settles fewer of them
    # than the pair-by-pair intervals alone would.
    human = np.clip(base + np.arange(5)[:, None] * 0.03 + rng.normal(0, 0.12, (5, units)), 0, 1)
    machine = np.clip(human + rng.normal(0, 0.1, (5, units)), 0, 1)
    table = UnitTable(
        task="relevance",
        measure="nDCG@5",
        unit="turn",
        keys=[str(i) for i in range(units)],
        runs=[f"r{i}" for i in range(5)],
        machine=machine,
        human=human,
    )
    result = hybrid_estimate(table=table, method="ppi++")
    per_pair = [p.estimate.lo > 0 or p.estimate.hi < 0 for p in result.pairs]
    expected, *_ = multipletests([p.p_value for p in result.pairs], alpha=0.05, method="holm")
    assert [p.settled for p in result.pairs] == expected.tolist()
    assert sum(expected) < sum(per_pair)
    names = list(result.runs)
    tau = result.rank_agreement
    assert tau.tau == pytest.approx(
        kendalltau([result.runs[r].estimate for r in names], human.mean(1)).statistic
    )
    estimates = [result.runs[r].estimate for r in names]
    tests = [PairTest(p.a, p.b, p.estimate.estimate, p.estimate.se, p.p_value) for p in result.pairs]
    assert tau.lo <= _brute_force_bound(estimates, tests, expected, names) + 1e-12 and tau.hi == 1.0
    assert tau.estimand == "Kendall's tau-b of the hybrid ranking with the full-judgment ranking"


@pytest.mark.django_db
def test_it_states_holm_and_tau_in_estimates_json_and_text(hybrid_collection):
    data = json.loads(run("estimate", *BASE, "--human-judge", "nist", "--format", "json"))
    assert data["multiple_comparisons"] == "holm" and data["alpha"] == 0.05
    assert all(0 <= p["p_value"] <= 1 for p in data["pairs"])
    tau = data["rank_agreement"]
    assert tau["estimand"] == "Kendall's tau-b of the hybrid ranking with the full-judgment ranking"
    assert -1 <= tau["ci"][0] <= tau["ci"][1] == 1.0
    assert "bound from the Holm-settled pairs" in tau["interval"]
    text = run("estimate", *BASE, "--human-judge", "nist")
    assert "multiple comparisons: Holm, alpha 0.05" in text
    assert "Kendall's tau-b of the hybrid ranking with the full-judgment ranking: at least" in text


@pytest.mark.django_db
def test_it_shows_holm_and_tau_on_the_estimates_page(client, hybrid_collection):
    client.force_login(OrganiserFactory())
    response = report_page(
        client,
        reverse("judging:hybrid-estimate", args=["hybrid"]),
        {"task": "relevance", "human_judge": "nist", "machine_judge": "llm"},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hybrid-settled"' in body and "Holm" in body
    assert 'id="hybrid-tau"' in body and "Kendall" in body


def test_a_two_stage_like_design_gets_paired_differences_holm_and_the_tau_bound():
    rng = np.random.default_rng(5)
    turns = 25
    resid = np.linspace(0.3, 0.6, 5)[:, None] + rng.normal(0, 0.15, (5, turns))
    estimates = resid.mean(1)
    result = HybridEstimate(
        task="relevance", measure="nDCG@5", unit="pair", method="ppi++", alpha=0.05, design=""
    )
    runs = [f"r{i}" for i in range(5)]
    for r, name in enumerate(runs):
        result.runs[name] = Estimate(float(estimates[r]), 0.0, 1.0, 0.0, 0.0, turns, 100, float("nan"))
    add_pairs(
        result,
        estimates=estimates,
        difference_se=lambda i, j: float(np.std(resid[i] - resid[j], ddof=1) / np.sqrt(turns)),
        df=turns - 1,
        human_only=estimates[::-1],
        n_human=turns,
        n_machine=100,
    )
    pairs = list(itertools.combinations(range(5), 2))
    assert [(p.a, p.b) for p in result.pairs] == [(runs[i], runs[j]) for i, j in pairs]
    p_values = []
    for pair, (i, j) in zip(result.pairs, pairs, strict=True):
        d = resid[i] - resid[j]
        se = d.std(ddof=1) / np.sqrt(turns)
        assert pair.estimate.estimate == pytest.approx(d.mean())
        assert pair.estimate.hi - pair.estimate.lo == pytest.approx(2 * student.ppf(0.975, turns - 1) * se)
        p_values.append(2 * student.sf(abs(d.mean()) / se, turns - 1))
    assert [p.p_value for p in result.pairs] == pytest.approx(p_values)
    expected, *_ = multipletests(p_values, alpha=0.05, method="holm")
    assert [p.settled for p in result.pairs] == expected.tolist()
    assert result.rank_agreement.tau == pytest.approx(kendalltau(estimates, estimates[::-1]).statistic)
    assert result.rank_agreement.hi == 1.0 and result.rank_agreement.lo <= 1.0
