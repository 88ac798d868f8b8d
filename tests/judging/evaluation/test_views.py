"""Evaluation pages: organisers only, the table (computed by a task worker) equals runs_evaluate, bad input
answers 400, text escaped."""

import pytest
from django.urls import reverse

from judging.scores.relevance import runs_evaluate
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)
from tests.judging.helpers import report_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection)
    first, second = TurnFactory(topic=topic), TurnFactory(topic=topic)
    judge = JudgeFactory(name="nist")
    RelevanceJudgmentFactory(judge=judge, turn=first, passage_id="a", grade=3)
    RelevanceJudgmentFactory(judge=judge, turn=second, passage_id="b", grade=2)
    best = RunFactory(collection=collection, name="best")
    RankingFactory(run=best, turn=first, passage_ids=["a"])
    RankingFactory(run=best, turn=second, passage_ids=["b"])
    sneaky = RunFactory(collection=collection, name="<script>alert(1)</script>")
    RankingFactory(run=sneaky, turn=first, passage_ids=["x", "a"])
    return collection, judge, best, sneaky, (first, second)


def runs_url(collection):
    return reverse("judging:evaluation-runs", args=[collection.name])


def run_url(collection, run):
    return reverse("judging:evaluation-run", args=[collection.name, run.name])


@pytest.mark.parametrize("page", ["index", "runs", "run"])
def test_it_sends_anonymous_users_to_login(client, setup, page):
    collection, _, best, _, _ = setup
    url = {
        "index": reverse("judging:evaluation-index"),
        "runs": runs_url(collection),
        "run": run_url(collection, best),
    }[page]

    response = client.get(url, {"judge": "nist"})

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("page", ["index", "runs", "run"])
def test_it_forbids_assessors(client, setup, page):
    collection, _, best, _, _ = setup
    client.force_login(UserFactory())
    url = {
        "index": reverse("judging:evaluation-index"),
        "runs": runs_url(collection),
        "run": run_url(collection, best),
    }[page]

    response = client.get(url, {"judge": "nist"})

    assert response.status_code == 403
    assert b"0.5000" not in response.content


def test_it_shows_organisers_the_table_of_runs_evaluate(client, setup):
    collection, judge, best, sneaky, _ = setup
    client.force_login(OrganiserFactory())

    response = report_page(client, runs_url(collection), {"judge": "nist", "rel": "3"})

    assert response.status_code == 200
    expected = runs_evaluate(collection=collection, judge=judge, rel_threshold=3)
    evaluation = response.context["evaluation"]
    assert evaluation.runs == expected.runs
    assert [row["run"] for row in response.context["rows"]] == ["best", sneaky.name]
    html = response.content.decode()
    assert "P(rel=3)@20" in html
    assert f'data-sort-value="{expected.runs["best"]["AP(rel=3)"]!r}"' in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "js/sortable.js" in html


def test_it_shows_one_run_per_turn_with_missing_turns_at_zero(client, setup):
    collection, judge, _, sneaky, (first, second) = setup
    client.force_login(OrganiserFactory())

    response = report_page(client, run_url(collection, sneaky), {"judge": "nist", "rel": "2"})

    assert response.status_code == 200
    rows = response.context["rows"]
    assert [row["turn"] for row in rows] == [first.turn_id, second.turn_id]
    expected = runs_evaluate(collection=collection, judge=judge, runs=[sneaky]).per_turn[sneaky.name]
    measures = response.context["evaluation"].measures
    assert rows[0]["values"] == [expected[first.turn_id][m] for m in measures]
    assert rows[1] == {"turn": second.turn_id, "values": [0.0] * len(measures), "missing": True}


def test_it_shows_only_the_form_before_a_judge_is_chosen(client, setup):
    collection, *_ = setup
    client.force_login(OrganiserFactory())

    response = client.get(runs_url(collection))

    assert response.status_code == 200
    assert response.context["evaluation"] is None
    assert [j.name for j in response.context["form"].fields["judge"].queryset] == ["nist"]


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"judge": "nist", "rel": "0"}, "Select a valid choice"),
        ({"judge": "nist", "rel": "two"}, "Select a valid choice"),
        ({"judge": "nobody", "rel": "2"}, "Select a valid choice"),
    ],
)
def test_it_answers_400_with_the_reason_for_bad_input(client, setup, params, reason):
    collection, *_ = setup
    client.force_login(OrganiserFactory())

    response = client.get(runs_url(collection), params)

    assert response.status_code == 400
    assert reason in response.content.decode()
    assert response.context["evaluation"] is None


def test_it_answers_404_for_a_run_of_another_collection(client, setup):
    collection, *_ = setup
    client.force_login(OrganiserFactory())
    other = RunFactory()

    response = client.get(run_url(collection, other), {"judge": "nist"})

    assert response.status_code == 404


def test_a_link_naming_only_the_judge_uses_the_default_threshold(client, setup):
    collection, judge, *_ = setup
    client.force_login(OrganiserFactory())

    response = report_page(client, runs_url(collection), {"judge": "nist"})

    assert response.status_code == 200
    assert response.context["evaluation"].runs == runs_evaluate(collection=collection, judge=judge).runs
    assert "P(rel=2)@20" in response.content.decode()
