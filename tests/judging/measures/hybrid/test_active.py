"""Active sampling that pays, or says it does not: probabilities from the expected size of the human-machine
correction, effective_n as the size of a uniform sample of the same width, and the verdict of the
simulation in simulate_budget and on the budget page."""

import json

import numpy as np
import pytest

from judging.measures.hybrid.active import (
    correction_from_machine,
    correction_from_pilot,
    uniform_equivalent_n,
    verdict,
)
from judging.measures.hybrid.estimators import mean_interval
from judging.measures.hybrid.sampling import inclusion_probabilities
from judging.measures.hybrid.simulation import simulate
from tests.factories import OrganiserFactory
from tests.judging.budget_page import budget_simulated
from tests.judging.helpers import BASE, run


def test_it_predicts_the_correction_from_the_machines_values_as_a_calibrated_spread():
    machine = np.array([[0.0, 0.5, 0.9], [1.0, 0.5, 0.1]])
    assert correction_from_machine(machine) == pytest.approx([0.0, 0.5, 0.3])


def test_it_predicts_the_correction_from_a_pilot_by_machine_value():
    rng = np.random.default_rng(0)
    machine = rng.random((1, 400))
    # The machine is exact below 0.5 and wrong by 0.4 above: the pilot should say so.
    truth = np.where(machine < 0.5, machine, machine - 0.4)
    pilot = np.full(truth.shape, np.nan)
    pilot[:, :60] = truth[:, :60]
    size = correction_from_pilot(human=pilot, machine=machine)
    low, high = size[machine[0] < 0.3], size[machine[0] > 0.7]
    assert high.min() > 3 * low.max()
    assert high.mean() == pytest.approx(0.4, rel=0.15)


def test_it_gives_an_effective_n_a_uniform_sample_of_that_size_would_match():
    """A sample drawn mostly among the hard units: their plain variance is not the population's, and
    effective_n read from it was several times too high."""
    rng = np.random.default_rng(0)
    big_n = 2000
    hard = rng.random(big_n) < 0.1
    truth = (rng.random(big_n) < np.where(hard, 0.5, 0.02)).astype(float)
    machine = np.where(hard, 0.5, 0.0)
    pi = inclusion_probabilities(uncertainty=np.where(hard, 1.0, 0.05), budget=100)
    reported, variances = [], []
    for _ in range(300):
        x = rng.random(big_n) < pi
        e = mean_interval(y=truth[x], yhat=machine[x], yhat_all=machine, method="active", pi=pi[x])
        reported.append(e.effective_n)
        variances.append(e.se**2)
    matching = truth.var(ddof=1) / np.mean(variances)  # the uniform size whose variance is the same
    assert np.median(reported) == pytest.approx(matching, rel=0.4)


def test_it_reads_effective_n_as_the_plain_formula_on_a_uniform_sample():
    y = np.array([0.1, 0.4, 0.5, 0.9, 0.3])
    se = 0.05
    assert uniform_equivalent_n(y=y, se=se, n=5) == pytest.approx(y.var(ddof=1) / se**2)
    assert uniform_equivalent_n(y=y, se=se, n=5, pi=np.full(5, 0.1)) == pytest.approx(y.var(ddof=1) / se**2)


def _calibrated(truth_follows_machine, seed=5, units=1500):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.3, 0.3, (1, units))
    share = p if truth_follows_machine else 0.5
    return (rng.random((1, units)) < share).astype(float), p


def test_it_says_active_sampling_pays_where_the_machine_knows_where_its_errors_are():
    truth, machine = _calibrated(True)
    result = simulate(
        truth=truth,
        machine=machine,
        budgets=[100, 300],
        repeats=300,
        seed=1,
        uncertainty=correction_from_machine(machine),
        methods=["ppi++", "active"],
    )
    outcome = verdict(budgets=result.budgets, alpha=0.05)
    assert outcome.pays and outcome.budgets == [100, 300]
    assert all(r < 0.95 for r in outcome.width_ratio.values())
    assert "pays at budgets 100, 300" in outcome.sentence


def test_it_says_active_sampling_does_not_pay_and_suggests_the_uniform_design():
    truth, machine = _calibrated(False)
    result = simulate(
        truth=truth,
        machine=machine,
        budgets=[100, 300],
        repeats=300,
        seed=1,
        uncertainty=correction_from_machine(machine),
        methods=["ppi++", "active"],
    )
    outcome = verdict(budgets=result.budgets, alpha=0.05)
    assert not outcome.pays and outcome.budgets == []
    assert outcome.sentence.endswith("use the uniform design")
    assert verdict(budgets={100: {"ppi++": result.budgets[100]["ppi++"]}}, alpha=0.05) is None


@pytest.mark.django_db
def test_it_gives_simulate_budgets_verdict_in_json_and_text(hybrid_collection):
    args = [*BASE, "--human-judge", "nist", "--budgets", "10", "30", "--repeats", "60"]
    data = json.loads(run("simulate_budget", *args, "--format", "json"))
    assert data["active_sampling"] == "expected correction, from the machine's values"
    assert set(data["active_verdict"]) == {"pays", "budgets", "width_ratio_to_ppi++", "verdict"}
    assert data["active_verdict"]["verdict"] in run("simulate_budget", *args)
    pilot = json.loads(run("simulate_budget", *args, "--active-from", "pilot", "--format", "json"))
    assert pilot["active_sampling"] == "expected correction, from a uniform pilot of 30 units"


@pytest.mark.django_db
def test_it_shows_the_verdict_on_the_budget_page(client, hybrid_collection):
    client.force_login(OrganiserFactory())
    response = budget_simulated(
        client,
        "hybrid",
        {
            "task": "relevance",
            "human_judge": "nist",
            "machine_judge": "llm",
            "budgets": "10 30",
            "repeats": 50,
        },
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hybrid-active-verdict"' in body
    assert "uniform PPI++" in body
