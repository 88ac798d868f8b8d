"""The budget page's simulation on a task worker: the submit queues and redirects without computing, the
simulation's page follows it and shows the figures `budget_simulate` computes from what it stored, the
same choices on the same labels are answered again, failures and lost workers are shown."""

import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Judge, Ranking, RelevanceJudgment
from judging.hybrid.budget import DEFAULT_REPEATS, budget_shown, json_decoded, json_encoded
from judging.hybrid.units import unit_table
from judging.hybrid.views import BUDGET_INITIAL, BudgetForm
from judging.measures.hybrid.planning import plan_budget
from judging.measures.hybrid.simulation import budget_simulate
from judging.models import BudgetSimulation
from tests.background import task_left_by_a_dead_worker, tasks_run_ready
from tests.factories import CollectionFactory, OrganiserFactory, UserFactory
from tests.judging.budget_page import budget_simulated
from tests.judging.helpers import QUERY

pytestmark = pytest.mark.django_db

ASKED = {**BUDGET_INITIAL, **QUERY, "budgets": "4 8", "repeats": "20", "target_width": "0.3"}


def _url(name="views"):
    return reverse("judging:hybrid-budget", args=[name])


def _job(body):
    start = body.index('<p id="hybrid-budget-job"')
    return body[start : body.index("</p>", start)]


def test_it_queues_the_simulation_and_answers_a_redirect_without_computing(client, views_collection):
    user = OrganiserFactory()
    client.force_login(user)

    response = client.post(_url(), ASKED)
    waiting = client.get(response["Location"])

    simulation = BudgetSimulation.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("judging:hybrid-budget-simulation", args=["views", simulation.pk])
    assert waiting.status_code == 200
    body = waiting.content.decode()
    assert 'data-status="pending"' in _job(body) and "waiting for a task worker" in _job(body)
    assert '<meta http-equiv="refresh" content="3">' in body
    assert 'id="hybrid-simulation"' not in body
    assert (simulation.status, simulation.result, simulation.created_by) == ("pending", None, user)
    assert simulation.params["budgets"] == [4, 8] and simulation.params["human_judge"] == ["nist"]
    assert simulation.task_id


def test_it_shows_the_figures_budget_simulate_computes_and_escapes_run_names(client, views_collection):
    client.force_login(OrganiserFactory())
    table = unit_table(
        collection=views_collection,
        task="relevance",
        measure="nDCG@5",
        human=[Judge.objects.get(name="nist")],
        machine=Judge.objects.get(name="llm"),
    )
    expected = budget_simulate(table=table, budgets=[4, 8], repeats=20)
    plan = plan_budget(table=table, target_width=0.3)

    page = budget_simulated(client, "views", ASKED)

    assert page.status_code == 200
    body = page.content.decode()
    assert 'data-status="done"' in _job(body)
    assert "<meta http-equiv" not in body
    assert page.context["simulation"].as_json() == expected.result.as_json()
    assert page.context["plan"] == plan.as_json()
    assert page.context["active_verdict"] == expected.active_verdict
    assert f"{expected.result.budgets[8]['ppi++'].mean_width:.4f}" in body
    assert "&lt;b&gt;bold&lt;/b&gt;" in body and "<b>bold</b>" not in body
    assert 'name="budgets" value="4 8"' in body and 'name="repeats" value="20"' in body  # as it was asked
    assert BudgetSimulation.objects.get().status == BudgetSimulation.Status.DONE


def test_it_answers_the_same_choices_on_the_same_labels_with_the_finished_simulation(
    client, views_collection
):
    client.force_login(OrganiserFactory())
    first = budget_simulated(client, "views", ASKED)

    again = client.post(_url(), ASKED, follow=True)

    assert first.status_code == again.status_code == 200
    assert again.redirect_chain[0][0] == first.request["PATH_INFO"]
    assert "shown again, not run twice" in again.content.decode()
    assert BudgetSimulation.objects.count() == 1
    assert tasks_run_ready() == 0


def test_it_simulates_anew_when_a_label_changed_since(client, views_collection):
    client.force_login(OrganiserFactory())
    budget_simulated(client, "views", ASKED)
    label = RelevanceJudgment.objects.filter(judge__name="nist").first()
    label.grade = (label.grade + 1) % 5
    label.save()

    again = client.post(_url(), ASKED)

    assert again.status_code == 302
    assert BudgetSimulation.objects.count() == 2
    assert BudgetSimulation.objects.first().status == BudgetSimulation.Status.PENDING


def test_it_simulates_anew_after_any_write_to_what_it_reads_even_one_the_orm_never_saw(
    client, views_collection
):
    client.force_login(OrganiserFactory())
    budget_simulated(client, "views", ASKED)
    # A grade changed by plain SQL (no updated_at, same count and ids), then a ranking: the table
    # revisions see both, as every stored report's fingerprint does.
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {RelevanceJudgment._meta.db_table} SET grade = 4 - grade WHERE id = %s",
            [RelevanceJudgment.objects.filter(judge__name="nist").values_list("pk", flat=True).first()],
        )

    after_label = client.post(_url(), ASKED)
    tasks_run_ready()
    Ranking.objects.filter(run__collection=views_collection).first().delete()
    after_ranking = client.post(_url(), ASKED)

    assert after_label.status_code == after_ranking.status_code == 302
    assert BudgetSimulation.objects.count() == 3
    assert len({s.fingerprint for s in BudgetSimulation.objects.all()}) == 3


def test_it_answers_a_bad_form_with_400_and_queues_nothing(client, views_collection):
    client.force_login(OrganiserFactory())

    response = client.post(_url(), {**ASKED, "budgets": "four"})

    assert response.status_code == 400
    assert "budgets are whole numbers separated by spaces" in response.content.decode()
    assert not BudgetSimulation.objects.exists()


def test_it_shows_a_failed_simulation_with_its_error(client, views_collection):
    client.force_login(OrganiserFactory())

    page = budget_simulated(client, "views", {**ASKED, "measure": "nope@3"})

    assert page.status_code == 200
    body = page.content.decode()
    assert 'data-status="failed"' in _job(body)
    assert "unknown measure &#x27;nope@3&#x27;" in body
    simulation = BudgetSimulation.objects.get()
    assert simulation.status == BudgetSimulation.Status.FAILED and simulation.finished_at is not None
    assert simulation.message.startswith("unknown measure 'nope@3'")


def test_it_shows_an_interrupted_simulation_and_queues_it_again(client, views_collection):
    client.force_login(OrganiserFactory())
    queued = client.post(_url(), ASKED)
    lost = BudgetSimulation.objects.get()
    task_left_by_a_dead_worker(lost.task_id)

    shown = client.get(queued["Location"]).content.decode()
    same = client.post(_url(), ASKED)
    again = client.post(reverse("judging:hybrid-budget-again", args=["views", lost.pk]))
    ran = tasks_run_ready()

    assert 'data-status="interrupted"' in _job(shown) and 'id="hybrid-budget-again"' in shown
    assert "<meta http-equiv" not in shown
    assert same["Location"] != queued["Location"]  # an interrupted simulation is not reused
    assert again.status_code == 302 and again["Location"] == queued["Location"]
    assert ran == 2
    lost.refresh_from_db()
    assert lost.status == BudgetSimulation.Status.DONE and lost.result["budgets"].keys() == {"4", "8"}


def test_it_refuses_to_queue_again_a_simulation_that_was_not_interrupted(client, views_collection):
    client.force_login(OrganiserFactory())
    queued = client.post(_url(), ASKED)
    simulation = BudgetSimulation.objects.get()

    again = client.post(reverse("judging:hybrid-budget-again", args=["views", simulation.pk]), follow=True)

    assert again.status_code == 200
    assert f"simulation {simulation.pk} is waiting for a worker: not interrupted" in again.content.decode()
    assert again.redirect_chain[0][0] == queued["Location"]
    assert tasks_run_ready() == 1


def test_it_shows_a_simulation_only_to_organisers_through_its_own_collection(client, views_collection):
    client.force_login(OrganiserFactory())
    client.post(_url(), ASKED)
    simulation = BudgetSimulation.objects.get()
    CollectionFactory(name="other")
    url = reverse("judging:hybrid-budget-simulation", args=["views", simulation.pk])
    client.logout()

    anonymous = client.get(url)
    client.force_login(UserFactory())
    assessor = client.get(url)
    client.force_login(OrganiserFactory())
    elsewhere = client.get(reverse("judging:hybrid-budget-simulation", args=["other", simulation.pk]))
    again_elsewhere = client.post(reverse("judging:hybrid-budget-again", args=["other", simulation.pk]))
    mine = client.get(url)

    assert anonymous.status_code == 302
    assert assessor.status_code == 403
    assert elsewhere.status_code == 404 and again_elsewhere.status_code == 404
    assert mine.status_code == 200


def test_it_lists_the_collections_recent_simulations_on_the_page(client, views_collection):
    client.force_login(OrganiserFactory(username="ann"))
    client.post(_url(), ASKED)
    simulation = BudgetSimulation.objects.get()

    page = client.get(_url())

    assert page.status_code == 200
    body = page.content.decode()
    listed = body[body.index('id="hybrid-budget-recent"') :]
    assert reverse("judging:hybrid-budget-simulation", args=["views", simulation.pk]) in listed
    assert "nDCG@5, budgets 4 8, 20 repeats" in listed and "ann" in listed


def test_the_page_and_simulate_budget_draw_the_same_number_of_samples_by_default(views_collection):
    from judging.management.commands.simulate_budget import Command

    parser = Command().create_parser("manage.py", "simulate_budget")

    assert BudgetForm(collection=views_collection).fields["repeats"].initial == DEFAULT_REPEATS
    assert BUDGET_INITIAL["repeats"] == DEFAULT_REPEATS == parser.get_default("repeats") == 500
    call_command("check")


def test_it_stores_figures_json_cannot_hold_and_shows_them_as_computed():
    figures = {"coverage": 0.9, "mean_width": 0.0, "width_ratio": float("nan"), "coverage_mc_se": 0.01}
    figures |= {"mc_error": 0.01, "worst_run_coverage": float("inf"), "run_widths": [0.0], "warning": None}
    stored = {
        "units": 12,
        "runs": 1,
        "constant_runs": [],
        "repeats": 20,
        "alpha": 0.05,
        "seed": 0,
        "fpc": False,
        "warnings": {},
        "budgets": {"4": {"ppi++": figures}},
        "active_sampling": "none",
        "left_out_budgets": [],
        "active_verdict": None,
        "run_names": ["r"],
        "table_units": 12,
        "plan": None,
    }

    encoded = json_encoded(stored)
    shown = budget_shown(stored=encoded, params={"alpha": 0.05, "method": "ppi++", "fpc": False})

    assert encoded["budgets"]["4"]["ppi++"]["width_ratio"] == {"float": "nan"}
    json.dumps(encoded, allow_nan=False)  # valid JSON, as PostgreSQL requires
    f = shown["simulation"].budgets[4]["ppi++"]
    assert f.width_ratio != f.width_ratio and f.worst_run_coverage == float("inf")
    assert json_decoded(encoded)["budgets"]["4"]["ppi++"]["coverage"] == 0.9


def test_the_simulation_page_links_the_estimates_of_its_choices(client, views_collection):
    client.force_login(OrganiserFactory())

    page = budget_simulated(client, "views", ASKED)

    body = page.content.decode()
    start = body.index('id="hybrid-estimate-link"') - 200
    link = body[start : body.index('id="hybrid-estimate-link"')]
    assert (
        "task=relevance&amp;measure=nDCG%405" in link
        and "human_judge=nist" in link
        and "machine_judge=llm" in link
    )


def _queries(client, url):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries)


def test_the_simulation_page_makes_as_many_queries_with_many_simulations_listed(client, views_collection):
    client.force_login(OrganiserFactory())
    shown = budget_simulated(client, "views", ASKED)
    url = shown.request["PATH_INFO"]
    few = _queries(client, url)
    for n in range(2, 8):
        client.force_login(OrganiserFactory())
        client.post(_url(), {**ASKED, "repeats": str(10 * n + 1)})

    many = _queries(client, url)

    assert BudgetSimulation.objects.count() == 7
    assert few == many


def test_a_form_in_the_address_fills_the_form_in_and_computes_nothing(client, views_collection):
    client.force_login(OrganiserFactory())

    filled = client.get(_url(), {**QUERY, "budgets": "4 8", "repeats": "20"})
    bad = client.get(_url(), {**QUERY, "budgets": "four"})

    assert filled.status_code == 200
    assert 'name="budgets" value="4 8"' in filled.content.decode()
    assert 'id="hybrid-simulation"' not in filled.content.decode()
    assert bad.status_code == 400
    assert not BudgetSimulation.objects.exists()
