"""The hybrid pages: organisers only, error bars and the budget charts rendered, collection text escaped."""

import pytest
from django.urls import reverse

from annotation.models import Judge, RelevanceJudgment
from tests.factories import (
    JudgeFactory,
    OrganiserFactory,
    UserFactory,
)
from tests.judging.budget_page import budget_simulated
from tests.judging.helpers import QUERY, report_page

pytestmark = pytest.mark.django_db


def test_it_sends_anonymous_users_to_login_and_refuses_non_organisers(client, views_collection):
    url = reverse("judging:hybrid-estimate", args=["views"])
    assert client.get(url).status_code == 302
    client.force_login(UserFactory())
    assert client.get(url).status_code == 403
    assert client.get(reverse("judging:hybrid-budget", args=["views"])).status_code == 403


def test_the_estimate_page_draws_an_error_bar_per_run_and_escapes_run_names(client, views_collection):
    client.force_login(OrganiserFactory())
    response = report_page(client, reverse("judging:hybrid-estimate", args=["views"]), QUERY)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hybrid-error-bars"' in body and body.count("<circle") == 2
    assert "&lt;b&gt;bold&lt;/b&gt;" in body and "<b>bold</b>" not in body


def test_the_estimate_page_says_what_is_wrong_with_a_bad_measure(client, views_collection):
    client.force_login(OrganiserFactory())
    response = report_page(
        client, reverse("judging:hybrid-estimate", args=["views"]), {**QUERY, "measure": "nope@3"}
    )
    assert response.status_code == 400
    assert "unknown measure" in response.content.decode()


def test_the_budget_page_plots_coverage_and_width_and_gives_the_plan(client, views_collection):
    client.force_login(OrganiserFactory())
    query = {**QUERY, "budgets": "4 8", "repeats": "20", "target_width": "0.3", "settle_share": "0.5"}
    response = budget_simulated(client, "views", query)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hybrid-coverage"' in body and 'id="hybrid-width"' in body
    assert body.count("<polyline") == 8  # four methods on each chart
    assert "Plan" in body
    assert "Warning: pilot: coverage not shown to hold at 12 human-labelled units" in body


EVALUATION = {
    "judge": "nist",
    "hybrid-human_judge": "nist",
    "hybrid-machine_judge": "llm",
    "hybrid-method": "ppi++",
    "hybrid-measure": "nDCG@5",
}


def _panel(body):
    start = body.index('id="hybrid-panel"')
    return body[start : body.index("</section>", start)]


def test_the_evaluation_page_refuses_anonymous_users_and_non_organisers_its_estimates(
    client, views_collection
):
    url = reverse("judging:evaluation-runs", args=["views"])
    assert client.get(url, EVALUATION).status_code == 302
    client.force_login(UserFactory())
    response = client.get(url, EVALUATION)
    assert response.status_code == 403
    assert b"evaluation-error-bars" not in response.content


def test_the_evaluation_page_draws_each_runs_estimate_as_an_error_bar(client, views_collection):
    from judging.hybrid.estimate import hybrid_estimate
    from judging.hybrid.units import unit_table

    client.force_login(OrganiserFactory())
    response = report_page(client, reverse("judging:evaluation-runs", args=["views"]), EVALUATION)

    assert response.status_code == 200
    panel = _panel(response.content.decode())
    assert 'id="evaluation-error-bars"' in panel and panel.count("<circle") == 2
    assert "&lt;b&gt;bold&lt;/b&gt;" in panel and "<b>bold</b>" not in panel
    assert "style=" not in panel and "<script" not in panel
    assert response.context["evaluation"] is not None  # the runs table is still there
    judges = {j.name: j for j in Judge.objects.filter(name__in=["nist", "llm"])}
    table = unit_table(
        collection=views_collection,
        task="relevance",
        measure="nDCG@5",
        human=judges["nist"],
        machine=judges["llm"],
    )
    expected = hybrid_estimate(table=table, method="ppi++", pairs=False)
    shown = response.context["hybrid"]
    assert {r: (e.estimate, e.lo, e.hi) for r, e in shown.runs.items()} == {
        r: (e.estimate, e.lo, e.hi) for r, e in expected.runs.items()
    }
    # The evaluation's own choices ride along in the estimate form, and the full page link keeps the choice.
    assert '<input type="hidden" name="judge" value="nist">' in panel
    assert "human_judge=nist" in panel and "machine_judge=llm" in panel


def test_the_evaluation_page_says_what_is_wrong_with_the_estimate_choice(client, views_collection):
    client.force_login(OrganiserFactory())
    url = reverse("judging:evaluation-runs", args=["views"])

    bad_measure = report_page(client, url, {**EVALUATION, "hybrid-measure": "nope@3"})
    assert bad_measure.status_code == 400
    assert "unknown measure" in _panel(bad_measure.content.decode())
    unknown_judge = client.get(url, {**EVALUATION, "hybrid-machine_judge": "<i>x</i>"})
    assert unknown_judge.status_code == 400
    assert "<i>x</i>" not in unknown_judge.content.decode()


def test_the_evaluation_page_merges_several_human_judges(client, views_collection):
    second = JudgeFactory(name="second")
    turn = RelevanceJudgment.objects.filter(judge__name="nist").first().turn
    RelevanceJudgment.objects.create(judge=second, turn=turn, passage_id="d00", grade=4)
    client.force_login(OrganiserFactory())
    query = {**EVALUATION, "hybrid-human_judge": ["nist", "second"]}
    response = report_page(client, reverse("judging:evaluation-runs", args=["views"]), query)

    assert response.status_code == 200
    assert any("2 judges (nist, second) merged" in n for n in response.context["hybrid"].notes)


def test_the_budget_page_shows_the_worst_run_the_monte_carlo_error_warnings_and_offers_the_correction(
    client, views_collection
):
    client.force_login(OrganiserFactory())
    query = {**QUERY, "budgets": "4 12", "repeats": "20", "fpc": "on"}
    response = budget_simulated(client, "views", query)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="fpc"' in body and "Finite-population correction: the intervals are for" in body
    assert "Worst run's coverage" in body and "Monte Carlo error" in body
    assert 'id="hybrid-budget-warnings"' in body and "Budget 4: coverage not shown to hold" in body
    assert "0.05-level" not in body and "95%" in body


def test_the_estimate_page_warns_below_30_units(client, views_collection):
    client.force_login(OrganiserFactory())
    response = report_page(client, reverse("judging:hybrid-estimate", args=["views"]), QUERY)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hybrid-warnings"' in body and "12 human-labelled units (fewer than 30)" in body
