"""Rankings with confidence: Holm's settled pairs (against statsmodels), Kendall's tau and its bootstrap
interval (against scipy), in `estimate`'s text and JSON and on the estimates page."""

import json

import numpy as np
import pytest
from django.urls import reverse
from scipy.stats import kendalltau
from statsmodels.stats.multitest import multipletests

from judging.hybrid.estimate import hybrid_estimate
from judging.measures.hybrid.table import UnitTable
from judging.measures.ranking import (
    holm_reject,
    kendall_tau_b,
    pair_p_value,
    tau_interval,
    unit_bootstrap,
)
from tests.factories import OrganiserFactory
from tests.judging.helpers import BASE, run


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


def test_it_bootstraps_a_tau_interval_that_holds_the_point_and_narrows_with_more_units():
    rng = np.random.default_rng(2)
    quality = np.linspace(0.2, 0.6, 6)[:, None]

    def interval(units):
        human = np.clip(quality + rng.normal(0, 0.25, (6, units)), 0, 1)
        machine = np.clip(human + rng.normal(0.05, 0.1, (6, units)), 0, 1)
        hybrid, human_only, hd, yd = unit_bootstrap(
            human=human, machine=machine, drawn=np.ones(units, bool), pi=None, lam=np.full(6, 0.8)
        )
        assert human_only == pytest.approx(human.mean(1))
        return tau_interval(hybrid=hybrid, human=human_only, hybrid_draws=hd, human_draws=yd)

    small, large = interval(20), interval(400)
    assert small.lo <= small.tau <= small.hi and large.lo <= large.tau <= large.hi
    assert large.hi - large.lo < small.hi - small.lo
    ties = np.ones((5, 3))
    assert tau_interval(hybrid=np.ones(3), human=np.arange(3.0), hybrid_draws=ties, human_draws=ties) is None


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
    assert result.rank_agreement.tau == pytest.approx(
        kendalltau([result.runs[r].estimate for r in names], human.mean(1)).statistic
    )


@pytest.mark.django_db
def test_it_states_holm_and_tau_in_estimates_json_and_text(hybrid_collection):
    data = json.loads(run("estimate", *BASE, "--human-judge", "nist", "--format", "json"))
    assert data["multiple_comparisons"] == "holm" and data["alpha"] == 0.05
    assert all(0 <= p["p_value"] <= 1 for p in data["pairs"])
    tau = data["rank_agreement"]
    assert tau["ci"][0] <= tau["kendall_tau"] <= tau["ci"][1]
    assert "bootstrap over the human-labelled units" in tau["interval"]
    text = run("estimate", *BASE, "--human-judge", "nist")
    assert "multiple comparisons: Holm, alpha 0.05" in text
    assert "Kendall's tau, hybrid vs human-only ranking on the sample:" in text


@pytest.mark.django_db
def test_it_shows_holm_and_tau_on_the_estimates_page(client, hybrid_collection):
    client.force_login(OrganiserFactory())
    response = client.get(
        reverse("judging:hybrid-estimate", args=["hybrid"]),
        {"task": "relevance", "human_judge": "nist", "machine_judge": "llm"},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hybrid-settled"' in body and "Holm" in body
    assert 'id="hybrid-tau"' in body and "Kendall" in body
