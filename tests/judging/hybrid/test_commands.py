"""The hybrid commands on a small synthetic collection: JSON shapes, samples with their probabilities and
the work they create, agreement with the plain evaluation, and CommandError naming the valid values."""

import json

import numpy as np
import pytest
from django.core.management.base import CommandError

from annotation.models import Assignment, Judge, Pool, PoolEntry, RelevanceJudgment
from judging.models import HumanSample
from judging.scores.relevance import runs_evaluate
from tests.factories import (
    UserFactory,
)
from tests.judging.helpers import BASE, PASSAGES, TURNS, run

pytestmark = pytest.mark.django_db


def test_estimate_json_has_the_documented_shape_and_classical_equals_the_evaluation(hybrid_collection):
    data = json.loads(
        run(
            "estimate",
            *BASE,
            "--human-judge",
            "nist",
            "--measure",
            "nDCG@5",
            "--method",
            "classical",
            "--format",
            "json",
        )
    )
    assert set(data) >= {"method", "alpha", "runs", "pairs", "ranking"}
    assert set(data["runs"]["run0"]) >= {"estimate", "ci", "n_human", "n_machine", "effective_n"}
    evaluation = runs_evaluate(collection=hybrid_collection, judge=Judge.objects.get(name="nist"))
    for name, row in data["runs"].items():
        assert row["estimate"] == pytest.approx(evaluation.runs[name]["nDCG@5"])
        assert row["n_human"] == TURNS
    assert data["ranking"][0]["run"] == "run0"  # the run ordered by the human grades
    assert any("uniform random sample" in note for note in data["notes"])
    assert {(p["a"], p["b"]) for p in data["pairs"]} == {("run0", "run1"), ("run0", "run2"), ("run1", "run2")}


def test_sample_for_humans_stores_probabilities_and_creates_the_assignment(hybrid_collection):
    assessor = UserFactory(username="ann")
    out = run(
        "sample_for_humans",
        *BASE,
        "--budget",
        "10",
        "--strategy",
        "uniform",
        "--seed",
        "1",
        "--name",
        "pilot",
        "--pool",
        "pool",
        "--assessors",
        "ann",
        "--format",
        "json",
    )
    data = json.loads(out)
    assert data["drawn"] == 10 and data["population"] == TURNS
    assert all(u["inclusion_probability"] == pytest.approx(10 / TURNS) for u in data["units"])
    assignment = Assignment.objects.get(name="pilot")
    assert assessor in assignment.assessors.all()
    assert sorted(u.label for u in assignment.units.all()) == sorted(u["key"] for u in data["units"])

    estimate = json.loads(
        run("estimate", *BASE, "--human-judge", "nist", "--sample", "pilot", "--format", "json")
    )
    assert all(r["n_human"] == 10 for r in estimate["runs"].values())
    assert "sample pilot" in estimate["design"]


def test_the_uncertainty_strategy_uses_other_machine_judges_and_never_gives_zero(hybrid_collection):
    run(
        "sample_for_humans",
        *BASE,
        "--budget",
        "12",
        "--strategy",
        "uncertainty",
        "--seed",
        "2",
        "--confidence-judges",
        "llm-b",
        "--name",
        "active",
        "--no-work",
    )
    sample = HumanSample.objects.get(name="active")
    probabilities = list(sample.units.values_list("inclusion_probability", flat=True))
    assert probabilities and min(probabilities) > 0
    assert len(set(np.round(probabilities, 9))) > 1  # unequal: the disagreement decides
    data = json.loads(
        run(
            "estimate",
            *BASE,
            "--human-judge",
            "nist",
            "--sample",
            "active",
            "--method",
            "active",
            "--format",
            "json",
        )
    )
    assert all(r["ci"][0] <= r["estimate"] <= r["ci"][1] for r in data["runs"].values())


def test_relevant_share_by_pair_is_one_entry_named_pool_and_its_sample_gets_its_own_pool(hybrid_collection):
    UserFactory(username="bob")
    args = [*BASE, "--measure", "relevant_share", "--unit", "pair"]
    run(
        "sample_for_humans",
        *args,
        "--budget",
        "30",
        "--seed",
        "3",
        "--name",
        "pairs",
        "--pool",
        "pool",
        "--assessors",
        "bob",
    )
    assert PoolEntry.objects.filter(pool__name="pairs").count() == 30
    # The sample's pool keeps its counts, as a built pool does (the pools list reads them).
    sampled = Pool.objects.get(name="pairs")
    turns = PoolEntry.objects.filter(pool=sampled).values("turn_id").distinct().count()
    assert (sampled.pair_count, sampled.turn_count, sampled.unfiltered_turn_count) == (30, turns, 0)
    data = json.loads(
        run("estimate", *args, "--human-judge", "nist", "--sample", "pairs", "--format", "json")
    )
    assert list(data["runs"]) == ["pool"] and data["pairs"] == []
    truth = RelevanceJudgment.objects.filter(judge__name="nist", grade__gte=2).count() / (TURNS * PASSAGES)
    assert data["runs"]["pool"]["n_human"] == 30
    assert 0 < truth < 1


def test_simulate_budget_json_reports_every_method_per_budget(hybrid_collection):
    data = json.loads(
        run(
            "simulate_budget",
            *BASE,
            "--human-judge",
            "nist",
            "--budgets",
            "10",
            "20",
            "--repeats",
            "50",
            "--confidence-judges",
            "llm-b",
            "--format",
            "json",
        )
    )
    assert set(data["budgets"]) == {"10", "20"}
    for methods in data["budgets"].values():
        assert set(methods) == {"classical", "ppi", "ppi++", "active"}
        assert methods["classical"]["width_ratio"] == 1.0
        assert set(methods["ppi++"]) >= {"coverage", "mean_width", "width_ratio"}


def test_plan_budget_gives_labels_for_a_width_and_for_settling_pairs(hybrid_collection):
    data = json.loads(
        run(
            "plan_budget",
            *BASE,
            "--human-judge",
            "nist",
            "--target-width",
            "0.2",
            "--settle-share",
            "0.5",
            "--format",
            "json",
        )
    )
    assert data["n_pilot"] == TURNS
    assert data["budget_for_width"] is not None and data["budget_for_settling"] is not None
    assert set(data["runs"]) == {"run0", "run1", "run2"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "bayes"], "classical, ppi, ppi\\+\\+, active"),
        (["--measure", "nope@5"], "nDCG@5"),
        (["--sample", "missing"], "no sample named 'missing'"),
        (["--measure", "nDCG@5", "--unit", "pair"], "nDCG@k from a pair sample is not offered"),
        (["--measure", "RR", "--unit", "pair"], "pair units serve only relevant_share"),
    ],
)
def test_estimate_rejects_bad_input_naming_the_valid_values(hybrid_collection, args, message):
    with pytest.raises(CommandError, match=message):
        run("estimate", *BASE, "--human-judge", "nist", *args)


def test_sample_for_humans_rejects_an_unknown_strategy_and_a_missing_pool(hybrid_collection):
    with pytest.raises(CommandError, match="uniform, uncertainty"):
        run("sample_for_humans", *BASE, "--budget", "5", "--strategy", "greedy", "--name", "x")
    with pytest.raises(CommandError, match="no pool 'other'"):
        run("sample_for_humans", *BASE, "--budget", "5", "--name", "x", "--pool", "other")
    with pytest.raises(CommandError, match="needs the pool"):
        run("sample_for_humans", *BASE, "--budget", "5", "--name", "x")
    assert not HumanSample.objects.exists()


def test_estimate_with_fpc_is_narrower_and_a_census_has_no_sampling_error(hybrid_collection):
    args = [*BASE, "--human-judge", "nist", "--method", "classical", "--format", "json", "--no-pairs"]
    census = json.loads(run("estimate", *args, "--fpc"))
    assert census["fpc"] is True
    assert any("finite-population correction" in note for note in census["notes"])
    for row in census["runs"].values():
        assert row["ci"][0] == pytest.approx(row["estimate"]) == pytest.approx(row["ci"][1])

    run("sample_for_humans", *BASE, "--budget", "20", "--seed", "4", "--name", "half", "--no-work")
    plain = json.loads(run("estimate", *args, "--sample", "half"))
    corrected = json.loads(run("estimate", *args, "--sample", "half", "--fpc"))
    for name in ("run1", "run2"):  # run0 ranks by the human grades: nDCG@5 is 1 on every turn
        row, plain_row = corrected["runs"][name], plain["runs"][name]
        width, plain_width = row["ci"][1] - row["ci"][0], plain_row["ci"][1] - plain_row["ci"][0]
        assert row["estimate"] == pytest.approx(plain_row["estimate"])
        assert width / plain_width == pytest.approx(np.sqrt(1 - 20 / TURNS))


def test_simulate_budget_reports_the_worst_run_the_monte_carlo_error_and_warns_below_30_units(
    hybrid_collection,
):
    args = [*BASE, "--human-judge", "nist", "--budgets", "10", "35", "--repeats", "40", "--seed", "3"]
    data = json.loads(run("simulate_budget", *args, "--format", "json"))
    assert data["fpc"] is False
    assert set(data["warnings"]) == {"10"} and "fewer than 30" in data["warnings"]["10"]
    for budget, methods in data["budgets"].items():
        for f in methods.values():
            assert {"coverage", "worst_run_coverage", "mc_error", "mean_width", "width_ratio"} <= set(f)
            assert f["worst_run_coverage"] <= f["coverage"]
            assert f["mc_error"] == pytest.approx(
                np.sqrt(max(f["coverage"] * (1 - f["coverage"]), 1e-12) / 40)
            )
            assert (f["warning"] is not None) == (budget == "10")

    text = run("simulate_budget", *args)
    assert "worst_run_coverage  mc_error" in text
    assert "95% intervals;" in text and "warning: budget 10: coverage not shown to hold" in text


def test_simulate_budget_and_plan_budget_offer_the_finite_population_correction(hybrid_collection):
    simulate = [*BASE, "--human-judge", "nist", "--budgets", "30", "--repeats", "40", "--format", "json"]
    plain, corrected = (json.loads(run("simulate_budget", *simulate, *extra)) for extra in ([], ["--fpc"]))
    assert corrected["fpc"] is True
    for method in ("classical", "ppi++"):
        assert corrected["budgets"]["30"][method]["mean_width"] < plain["budgets"]["30"][method]["mean_width"]

    plan = [*BASE, "--human-judge", "nist", "--target-width", "0.2", "--format", "json"]
    plain, corrected = (json.loads(run("plan_budget", *plan, *extra)) for extra in ([], ["--fpc"]))
    assert corrected["fpc"] is True
    assert corrected["budget_for_width"] <= plain["budget_for_width"]


def test_estimate_warns_about_runs_whose_sample_is_below_30_units(hybrid_collection):
    run("sample_for_humans", *BASE, "--budget", "12", "--seed", "4", "--name", "small", "--no-work")
    args = [*BASE, "--human-judge", "nist", "--sample", "small", "--no-pairs"]
    data = json.loads(run("estimate", *args, "--format", "json"))
    assert data["warnings"] and all("12 human-labelled units" in w for w in data["warnings"])
    assert all(row["warning"] and row["interval"] in {"t", "wilson"} for row in data["runs"].values())
    assert "warning: run1: coverage not shown to hold at 12 human-labelled units" in run("estimate", *args)


def test_estimate_reports_its_settings_simulated_coverage_and_warns_under_the_floor(hybrid_collection):
    run("sample_for_humans", *BASE, "--budget", "12", "--seed", "4", "--name", "cov", "--no-work")
    args = [*BASE, "--human-judge", "nist", "--sample", "cov", "--no-pairs", "--method", "active"]
    data = json.loads(run("estimate", *args, "--format", "json"))
    coverage = data["coverage"]
    assert coverage is not None and 0 <= coverage["worst_run"] <= coverage["mean"] <= 1
    warned = [w for w in data["warnings"] if w.startswith("simulated coverage")]
    assert bool(warned) == (coverage["worst_run"] < 0.90)
    if warned:
        assert f"{coverage['worst_run']:.3f}" in warned[0]
