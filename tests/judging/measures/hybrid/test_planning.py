"""plan_budget with assurance: the budget meets the target width in at least its stated share of samples,
never below 30 units, in the unit's own word, saying how sure it is when the pilot is small."""

import numpy as np
import pytest

from judging.measures.hybrid.estimators import mean_interval
from judging.measures.hybrid.planning import plan_budget
from judging.measures.hybrid.table import UnitTable
from tests.judging.helpers import BASE, run


def _population(units=800, seed=0, pilot=60, unit="turn"):
    rng = np.random.default_rng(seed)
    quality = np.array([[0.3], [0.45], [0.6]])
    truth = np.clip(quality + rng.normal(0, 0.22, (3, units)), 0, 1)
    machine = np.clip(0.8 * truth + 0.15 + rng.normal(0, 0.12, (3, units)), 0, 1)
    human = np.full(truth.shape, np.nan)
    chosen = rng.choice(units, size=pilot, replace=False)
    human[:, chosen] = truth[:, chosen]
    table = UnitTable(
        task="relevance",
        measure="nDCG@5",
        unit=unit,
        keys=[str(i) for i in range(units)],
        runs=["a", "b", "c"],
        machine=machine,
        human=human,
    )
    return table, truth, machine


def _share_meeting(truth, machine, budget, width, fpc, repeats=300, seed=1):
    """Per run, the share of uniform samples of `budget` units whose PPI++ interval is at most `width`."""
    rng = np.random.default_rng(seed)
    met = np.zeros(truth.shape[0])
    for _ in range(repeats):
        x = rng.choice(truth.shape[1], size=budget, replace=False)
        for r in range(truth.shape[0]):
            e = mean_interval(y=truth[r, x], yhat=machine[r, x], yhat_all=machine[r], method="ppi++", fpc=fpc)
            met[r] += e.width <= width
    return met / repeats


@pytest.mark.parametrize("fpc", [False, True])
def test_it_plans_a_budget_that_meets_its_width_in_at_least_its_stated_share_of_draws(fpc):
    table, truth, machine = _population()
    plan = plan_budget(table=table, target_width=0.08, alpha=0.05, fpc=fpc, assurance=0.8).as_json()
    budget = plan["budget_for_width"]
    assert plan["unit"] == "turn" and plan["assurance"] == 0.8
    assert 30 <= budget < 800
    shares = _share_meeting(truth, machine, budget, 0.08, fpc)
    # Monte Carlo error of a share near 0.8 over 300 draws is about 0.023.
    assert shares.min() >= 0.8 - 0.05, (budget, shares)
    # Sized from the pilot's own variance, it is the smallest such budget, not a generous one: a sixth
    # fewer units fall well short. The default sizes from the variance's upper bound, so that the plan
    # holds for most pilots, not on average over them: never less.
    own = plan_budget(table=table, target_width=0.08, fpc=fpc, assurance=0.8, pilot_upper=None).as_json()
    assert own["budget_for_width"] <= budget
    assert _share_meeting(truth, machine, own["budget_for_width"], 0.08, fpc).min() >= 0.8 - 0.05
    assert _share_meeting(truth, machine, int(own["budget_for_width"] * 5 / 6), 0.08, fpc).max() < 0.8


def test_it_never_recommends_fewer_than_30_units_and_speaks_of_pairs_for_pairs():
    table, _truth, _machine = _population(unit="pair", pilot=40)
    plan = plan_budget(table=table, target_width=0.9, settle_share=0.3).as_json()
    assert plan["budget_for_width"] == 30 and plan["budget_for_settling"] == 30
    assert plan["width_plan"].startswith(
        "every run's 95% interval at most 0.9 wide in 80% of samples: 30 pairs in all"
    )
    assert "labels" not in plan["width_plan"] + plan["settling_plan"]


def test_it_says_how_sure_it_is_when_the_pilot_is_small():
    table, _truth, _machine = _population(pilot=8)
    plan = plan_budget(table=table, target_width=0.1).as_json()
    lo, hi = plan["pilot_variance_range"]
    assert lo < 0.6 and hi > 2.5  # a variance from 8 units is known to within a factor of several
    assert (
        "from a pilot of 8 turns: the spread of the pilot's variance puts it anywhere from"
        in plan["width_plan"]
    )
    assert any("8 human-labelled units (fewer than 30)" in w for w in plan["warnings"])


def test_it_refuses_an_assurance_outside_zero_and_one():
    from judging.measures.hybrid.estimators import EstimationError

    table, _truth, _machine = _population(pilot=40)
    with pytest.raises(EstimationError, match="assurance"):
        plan_budget(table=table, target_width=0.1, assurance=1.0)


@pytest.mark.django_db
def test_plan_budget_speaks_in_turns_and_takes_an_assurance(hybrid_collection):
    args = [*BASE, "--human-judge", "nist", "--target-width", "0.3", "--settle-share", "0.5"]
    text = run("plan_budget", *args, "--assurance", "0.9")
    assert "in 90% of samples" in text and " turns in all" in text
    assert "label" not in text.replace("labelled", "")


def test_it_plans_pairs_on_the_real_ikat_2024_qrels_that_meet_the_width_as_often_as_it_says(shared_data):
    """The official grades as the truth, a noisy, lenient machine judge of them; relevant_share by pair."""
    grades = np.array(
        [
            int(line.split()[3])
            for line in (shared_data / "ikat2024/2024_test_qrels.trec").read_text().splitlines()
        ]
    )
    rng = np.random.default_rng(0)
    machine_grades = np.clip(grades + rng.choice([-1, 0, 0, 1, 1], size=len(grades)), 0, 4)
    truth = (grades >= 2).astype(float)[None, :]
    machine = (machine_grades >= 2).astype(float)[None, :]
    human = np.full(truth.shape, np.nan)
    pilot = rng.choice(truth.shape[1], size=300, replace=False)
    human[:, pilot] = truth[:, pilot]
    table = UnitTable(
        task="relevance",
        measure="relevant_share",
        unit="pair",
        keys=[str(i) for i in range(truth.shape[1])],
        runs=["pool"],
        machine=machine,
        human=human,
    )
    plan = plan_budget(table=table, target_width=0.06, assurance=0.8).as_json()
    budget = plan["budget_for_width"]
    assert (
        f"{budget} pairs in all (sized from the 90% upper bound of each run's variance, from a pilot of 300"
        in (plan["width_plan"])
    )
    share = _share_meeting(truth, machine, budget, 0.06, fpc=False, repeats=200)
    assert share[0] >= 0.8 - 0.06, (budget, share)
