"""Rankings from pair designs: `estimate` on a two-stage and a stratified pair sample gives every pair's
difference, Holm's settled pairs (against statsmodels) and the bound on the hybrid ranking's agreement
with the full-judgment ranking, as whole turns do."""

import json
from itertools import combinations

import pytest
from scipy.stats import kendalltau
from statsmodels.stats.multitest import multipletests

from tests.judging.helpers import BASE, run

ESTIMAND = "Kendall's tau-b of the hybrid ranking with the full-judgment ranking"


def _draw(name, design, measure, budget):
    run(
        "sample_for_humans",
        *BASE,
        "--unit",
        "pair",
        "--measure",
        measure,
        "--design",
        design,
        "--budget",
        budget,
        "--seed",
        "1",
        "--name",
        name,
        "--no-work",
    )


def _estimate(name, measure, method):
    args = [*BASE, "--human-judge", "nist", "--unit", "pair", "--measure", measure, "--sample", name]
    return json.loads(run("estimate", *args, "--method", method, "--format", "json")), run(
        "estimate", *args, "--method", method
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("design", "measure", "budget", "method"),
    [("two-stage", "nDCG@5", "150", "ppi++"), ("stratified", "P(rel=2)@5", "120", "ppi++")],
)
def test_a_pair_sample_gives_differences_holm_and_the_tau_bound(
    hybrid_collection, design, measure, budget, method
):
    _draw("s", design, measure, budget)
    data, text = _estimate("s", measure, method)
    runs = list(data["runs"])
    assert [(p["a"], p["b"]) for p in data["pairs"]] == list(combinations(runs, 2))
    for pair in data["pairs"]:
        difference = data["runs"][pair["a"]]["estimate"] - data["runs"][pair["b"]]["estimate"]
        assert pair["difference"] == pytest.approx(difference)
        assert pair["ci"][0] <= pair["difference"] <= pair["ci"][1]
    expected, *_ = multipletests([p["p_value"] for p in data["pairs"]], alpha=0.05, method="holm")
    assert [p["settled"] for p in data["pairs"]] == expected.tolist()
    assert data["multiple_comparisons"] == "holm"
    tau = data["rank_agreement"]
    assert tau["estimand"] == ESTIMAND and tau["ci"][1] == 1.0 and -1 <= tau["ci"][0] <= 1
    if all(expected):
        assert tau["ci"][0] == 1.0
    assert -1 <= tau["kendall_tau"] <= 1
    assert f"{ESTIMAND}: at least" in text and "settled pairs:" in text


@pytest.mark.django_db
def test_the_two_stage_tau_point_is_against_the_classical_ranking(hybrid_collection):
    _draw("s", "two-stage", "nDCG@5", "150")
    hybrid, _text = _estimate("s", "nDCG@5", "ppi++")
    classical, _text = _estimate("s", "nDCG@5", "classical")
    runs = list(hybrid["runs"])
    expected = kendalltau(
        [hybrid["runs"][r]["estimate"] for r in runs], [classical["runs"][r]["estimate"] for r in runs]
    ).statistic
    assert hybrid["rank_agreement"]["kendall_tau"] == pytest.approx(expected)
