"""AP from a two-stage sample (a census of each drawn turn's retrieved pairs) and intervals for runs whose
turn scores sit at 0 or 1: known answers, the betting interval's guarantee, and the commands."""

import json

import ir_measures
import numpy as np
import pytest
from django.core.management.base import CommandError

from judging.measures.hybrid.intervals import betting_interval
from judging.measures.hybrid.pairs import pair_population
from judging.measures.hybrid.ranked import parse_ranked, true_scores, turn_scores
from judging.measures.hybrid.two_stage import (
    at_boundary,
    census_pairs,
    drawn_turn_scores,
    turn_level,
    two_stage_intervals,
)
from tests.judging.helpers import BASE, run
from tests.judging.pair_data import machine_judge, runs_for, synthetic_qrels

AP = parse_ranked("AP(rel=2)")


@pytest.fixture(scope="module")
def small():
    qrels = synthetic_qrels(seed=3, turns=12, per_turn=25)
    runs = runs_for(qrels, seed=5, runs=3, depth=10)
    pop = pair_population(machine=machine_judge(qrels, seed=4), human=qrels, rankings=runs)
    return qrels, runs, pop


def test_a_census_of_every_turn_gives_ir_measures_ap_exactly(small):
    qrels, runs, pop = small
    every_turn = np.arange(len(pop.turns))
    got, empty = drawn_turn_scores(pop, AP, np.arange(pop.size), every_turn)
    assert empty == 0
    for r, name in enumerate(pop.runs):
        per_turn = {
            m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.AP(rel=2)], qrels, runs[name])
        }
        expected = np.array([per_turn.get(t, 0.0) for t in pop.turns])
        np.testing.assert_allclose(got[r], expected, rtol=0, atol=1e-12)
        assert got[r].mean() == pytest.approx(
            ir_measures.calc_aggregate([ir_measures.AP(rel=2)], qrels, runs[name])[ir_measures.AP(rel=2)],
            abs=1e-12,
        )
    np.testing.assert_allclose(turn_scores(pop, AP, pop.human), got, atol=1e-12)
    np.testing.assert_allclose(true_scores(pop, AP, pop.human), got.mean(1), atol=1e-4)  # infAP's epsilon


def test_a_drawn_turns_ap_is_exact_from_its_retrieved_pairs_and_the_rests_weighted_count(small):
    _qrels, _runs, pop = small
    turns = np.array([1, 4, 9])
    in_turns = np.isin(pop.turn, turns)
    census = np.flatnonzero(in_turns & census_pairs(pop, AP))
    rest = np.flatnonzero(in_turns & ~census_pairs(pop, AP))
    assert (pop.rank[:, rest] == 0).all()  # the census holds every retrieved pair
    got, _empty = drawn_turn_scores(pop, AP, np.concatenate([census, rest]), turns)
    np.testing.assert_allclose(got, turn_scores(pop, AP, pop.human)[:, turns], atol=1e-12)


def test_the_betting_interval_covers_a_mean_at_the_boundary_and_narrows_towards_a_census():
    rng = np.random.default_rng(0)
    population = np.ones(116)
    population[rng.choice(116, 6, replace=False)] = rng.random(6) * 0.3  # a near-perfect run's turns
    truth = population.mean()
    draws = np.stack([population[rng.choice(116, 25, replace=False)] for _ in range(300)])
    lo, hi = betting_interval(draws, population=116, alpha=0.05)
    assert ((lo <= truth) & (truth <= hi)).mean() >= 0.95
    # Every drawn value 1 still leaves room for the turns not drawn; drawing them all pins the mean.
    lo1, hi1 = betting_interval(np.ones((1, 25)), population=116, alpha=0.05)
    assert hi1[0] == 1.0 and 0.75 < lo1[0] < 0.99
    lo_all, hi_all = betting_interval(population[None, rng.permutation(116)], population=116, alpha=0.05)
    assert lo_all[0] <= truth <= hi_all[0] and hi_all[0] - lo_all[0] < 0.02


def test_a_run_at_the_boundary_gets_the_hull_of_t_and_betting_and_others_keep_t():
    rng = np.random.default_rng(1)
    machine = rng.random((2, 60))
    human = np.stack([np.where(rng.random(20) < 0.9, 1.0, 0.6), rng.random(20)])
    got = turn_level(human=human, machine_drawn=machine[:, :20], machine_all=machine, method="classical")
    assert list(got.boundary) == [True, False] and list(at_boundary(human)) == [True, False]
    _e, t_lo, t_hi = two_stage_intervals(got=got, alpha=0.05, interval="t")
    _e, lo, hi = two_stage_intervals(got=got, alpha=0.05)
    assert lo[0] < t_lo[0] and hi[0] >= t_hi[0]  # widened for the boundary run
    assert (lo[1], hi[1]) == (t_lo[1], t_hi[1])  # nDCG/AP: no correction, the old t
    _e, f_lo, f_hi = two_stage_intervals(got=got, alpha=0.05, interval="t-fpc")
    assert f_hi[1] - f_lo[1] == pytest.approx((t_hi[1] - t_lo[1]) * np.sqrt(1 - 20 / 60))
    with pytest.raises(Exception, match="interval must be one of"):
        two_stage_intervals(got=got, alpha=0.05, interval="wald")


def _sample(name, measure, budget):
    run(
        "sample_for_humans",
        *BASE,
        "--unit",
        "pair",
        "--measure",
        measure,
        "--design",
        "two-stage",
        "--budget",
        budget,
        "--seed",
        "1",
        "--name",
        name,
        "--no-work",
    )


def _estimate(measure, sample):
    return json.loads(
        run(
            "estimate",
            *BASE,
            "--human-judge",
            "nist",
            "--unit",
            "pair",
            "--measure",
            measure,
            "--sample",
            sample,
            "--method",
            "ppi++",
            "--format",
            "json",
        )
    )


@pytest.mark.django_db
def test_estimate_gives_ap_from_a_two_stage_sample_and_warns_for_the_run_at_the_boundary(hybrid_collection):
    _sample("two-ap", "AP(rel=2)", "120")
    data = _estimate("AP(rel=2)", "two-ap")
    assert "two-stage, 20 turns" in data["design"]
    for row in data["runs"].values():
        assert 0 <= row["ci"][0] <= row["estimate"] <= row["ci"][1] <= 1
    # run0 ranks by the human grade: AP 1 on every turn with a relevant pair, warned with its coverage.
    assert "score at 0 or 1" in data["runs"]["run0"]["warning"]
    assert "simulated coverage" in data["runs"]["run0"]["warning"]
    assert data["runs"]["run1"]["warning"] is None
    # A sample drawn for P@k has no census of the retrieved pairs below the cutoff: refused for AP.
    _sample("two-p", "P(rel=2)@5", "120")
    with pytest.raises(CommandError, match="when drawn for AP"):
        _estimate("AP(rel=2)", "two-p")
    # Too few turns for AP's interval: refused with the reason.
    _sample("two-ap-small", "AP(rel=2)", "60")
    with pytest.raises(CommandError, match="at least 20 drawn turns"):
        _estimate("AP(rel=2)", "two-ap-small")


@pytest.mark.django_db
def test_simulate_budget_runs_ap_by_the_two_stage_design_and_refuses_it_single_stage(hybrid_collection):
    args = [*BASE, "--human-judge", "nist", "--unit", "pair", "--measure", "AP(rel=2)"]
    data = json.loads(
        run("simulate_budget", *args, "--budgets", "60", "150", "--repeats", "20", "--format", "json")
    )
    assert data["design"] == "two-stage" and set(data["budgets"]) == {"60", "150"}
    assert "fewer than 20" in data["warnings"]["60"]
    with pytest.raises(CommandError, match="AP from a single-stage pair sample is not offered"):
        run("simulate_budget", *args, "--design", "stratified", "--budgets", "60", "--repeats", "5")
