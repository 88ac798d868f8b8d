"""The hybrid pages: organisers only, error bars and the budget charts rendered, collection text escaped."""

import pytest
from django.urls import reverse

from annotation.models import RelevanceJudgment
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    collection = CollectionFactory(name="views")
    human, machine = JudgeFactory(name="nist"), JudgeFactory(name="llm")
    runs = [
        RunFactory(collection=collection, name="<b>bold</b>"),
        RunFactory(collection=collection, name="plain"),
    ]
    rows = []
    for t in range(12):
        turn = TurnFactory(topic=TopicFactory(collection=collection), position=1)
        for p in range(3):
            rows.append(RelevanceJudgment(judge=human, turn=turn, passage_id=f"d{t}{p}", grade=(t + p) % 5))
            rows.append(
                RelevanceJudgment(judge=machine, turn=turn, passage_id=f"d{t}{p}", grade=(t + 2 * p) % 5)
            )
        for i, run in enumerate(runs):
            ids = [f"d{t}{p}" for p in (range(3) if i else range(2, -1, -1))]
            RankingFactory(run=run, turn=turn, passage_ids=ids, scores=[3, 2, 1])
    RelevanceJudgment.objects.bulk_create(rows)
    return collection


QUERY = {"task": "relevance", "human_judge": "nist", "machine_judge": "llm", "measure": "nDCG@5"}


def test_it_sends_anonymous_users_to_login_and_refuses_non_organisers(client, collection):
    url = reverse("judging:hybrid-estimate", args=["views"])
    assert client.get(url).status_code == 302
    client.force_login(UserFactory())
    assert client.get(url).status_code == 403
    assert client.get(reverse("judging:hybrid-budget", args=["views"])).status_code == 403


def test_the_estimate_page_draws_an_error_bar_per_run_and_escapes_run_names(client, collection):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:hybrid-estimate", args=["views"]), QUERY)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hybrid-error-bars"' in body and body.count("<circle") == 2
    assert "&lt;b&gt;bold&lt;/b&gt;" in body and "<b>bold</b>" not in body


def test_the_estimate_page_says_what_is_wrong_with_a_bad_measure(client, collection):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:hybrid-estimate", args=["views"]), {**QUERY, "measure": "nope@3"})
    assert response.status_code == 400
    assert "unknown measure" in response.content.decode()


def test_the_budget_page_plots_coverage_and_width_and_gives_the_plan(client, collection):
    client.force_login(OrganiserFactory())
    query = {**QUERY, "budgets": "4 8", "repeats": "20", "target_width": "0.3", "settle_share": "0.5"}
    response = client.get(reverse("judging:hybrid-budget", args=["views"]), query)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="hybrid-coverage"' in body and 'id="hybrid-width"' in body
    assert body.count("<polyline") == 8  # four methods on each chart
    assert "Plan" in body
