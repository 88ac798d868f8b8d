"""Warnings appear exactly where the setting's simulated coverage is under the guard a little above the
0.90 floor (a stub coverage source), and the forms refuse the combinations that do not run, queueing nothing."""

import numpy as np
import pytest
from django.urls import reverse

from judging.hybrid.estimate import hybrid_estimate
from judging.measures.hybrid.coverage import WARN_BELOW, Coverage, turn_coverage
from judging.measures.hybrid.table import UnitTable
from judging.models import BudgetSimulation
from tests.factories import OrganiserFactory, ResponseFactory, RunFactory
from tests.judging.budget_page import budget_simulated
from tests.judging.helpers import QUERY, report_page


def _table() -> UnitTable:
    rng = np.random.default_rng(0)
    machine = rng.random((3, 60))
    human = np.clip(machine + rng.normal(0, 0.1, machine.shape), 0, 1)
    human[:, 40:] = np.nan
    return UnitTable(
        "relevance", "nDCG@5", "turn", [f"t{i}" for i in range(60)], ["a", "b", "c"], machine, human
    )


@pytest.mark.parametrize("worst", [0.0, 0.5, 0.899, 0.9, 0.939, 0.94, 0.95, 1.0])
def test_the_coverage_warning_appears_exactly_under_the_guard_above_the_floor(worst):
    def stub(**_kwargs):
        return Coverage(worst=worst, mean=max(worst, 0.9), repeats=200, how="stub")

    result = hybrid_estimate(table=_table(), method="ppi++", coverage=stub, pairs=False)
    warned = [w for w in result.warnings if w.startswith("simulated coverage")]
    assert bool(warned) == (worst < WARN_BELOW)
    if warned:
        assert f"{worst:.3f}" in warned[0]
    assert result.as_json()["coverage"]["warned"] == (worst < WARN_BELOW)


def test_no_coverage_figure_no_warning():
    result = hybrid_estimate(table=_table(), method="ppi++", coverage=lambda **_k: None, pairs=False)
    assert not result.warnings and result.as_json()["coverage"] is None


def test_the_turn_simulation_runs_on_the_sample_it_is_given():
    table = _table()
    drawn = ~np.isnan(table.human[0])
    got = turn_coverage(table=table, drawn=drawn, pi=None, method="ppi++", alpha=0.05, fpc=False, repeats=50)
    assert got is not None and 0 <= got.worst <= got.mean <= 1 and got.repeats == 50


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"unit": "pair", "measure": "relevant_share", "design": "stratified"}, "no stratified estimator"),
        ({"unit": "pair", "measure": "relevant_share", "design": "two-stage"}, "no two-stage estimator"),
        ({"unit": "turn", "measure": "P@10", "design": "stratified"}, "choose unit pair"),
        ({"unit": "pair", "measure": "nDCG@5", "design": "stratified"}, "needs the two-stage design"),
        ({"unit": "pair", "measure": "P@10", "design": "default"}, "needs a pair design"),
    ],
)
def test_the_budget_page_refuses_what_does_not_run_and_queues_nothing(
    client, views_collection, extra, reason
):
    client.force_login(OrganiserFactory())
    query = {**QUERY, "budgets": "4 8", "repeats": "20", **extra}
    response = client.get(reverse("judging:hybrid-budget", args=["views"]), query)
    assert response.status_code == 400
    assert reason in response.content.decode()
    assert not BudgetSimulation.objects.exists()


@pytest.mark.django_db
def test_the_estimate_page_refuses_ranked_measures_by_pair(client, views_collection):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:hybrid-estimate", args=["views"]), {**QUERY, "unit": "pair"})
    assert response.status_code == 400
    assert "choose unit turn" in response.content.decode()


@pytest.mark.django_db
def test_answer_only_runs_are_listed_not_scored_on_the_evaluation_and_budget_pages(client, views_collection):
    answers = RunFactory(collection=views_collection, name="answers-only")
    ResponseFactory(run=answers, turn=views_collection.turns.first(), text="An answer.")
    client.force_login(OrganiserFactory())
    page = report_page(client, reverse("judging:evaluation-runs", args=["views"]), {"judge": "nist"})
    assert page.status_code == 200
    body = page.content.decode()
    assert (
        'id="evaluation-answer-only"' in body
        and "answers-only" in body.split('id="evaluation-answer-only"')[1]
    )
    assert "answers-only" not in body.split('id="evaluation-table"')[1].split("</table>")[0]
    budget = budget_simulated(client, "views", {**QUERY, "budgets": "4 8", "repeats": "20"})
    assert (
        "1 answer-only run (responses, no ranking) left out of nDCG@5: answers-only"
        in budget.content.decode()
    )
