"""Agreement pages and downloads: organisers only, every format, clear errors."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import Judge
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

# What the pages say, computed within the request (tests/judging/conftest.py).
pytestmark = pytest.mark.usefixtures("reports_in_request")

GRADES_A = [0, 1, 2, 3, 4, 2, 1, 0, 3, 2, 2, 1]
GRADES_B = [0, 2, 2, 3, 3, 1, 1, 0, 4, 2, 0, 1]


@pytest.fixture
def comparison():
    collection = CollectionFactory()
    turns = [TurnFactory(topic=TopicFactory(collection=collection)) for _ in range(3)]
    a, b = JudgeFactory(name="nist <b>"), JudgeFactory(name="gpt-4o", kind=Judge.Kind.LLM)
    for i, (ga, gb) in enumerate(zip(GRADES_A, GRADES_B, strict=True)):
        RelevanceJudgmentFactory(judge=a, turn=turns[i % 3], passage_id=f"p{i}", grade=ga)
        RelevanceJudgmentFactory(judge=b, turn=turns[i % 3], passage_id=f"p{i}", grade=gb)
    query = {"task": "relevance", "a": a.name, "b": b.name, "threshold": "2"}
    return collection, a, b, query


def _pages(collection):
    name = collection.name
    return [
        reverse("judging:agreement-index"),
        reverse("judging:agreement-report", args=[name]),
        reverse("judging:agreement-download", args=[name, "report.json"]),
        reverse("judging:agreement-ranking", args=[name]),
        reverse("judging:agreement-ranking-download", args=[name, "ranking.json"]),
        reverse("judging:agreement-campaign", args=[name]),
        reverse("judging:agreement-live", args=[name]),
    ]


@pytest.mark.django_db
def test_it_sends_anonymous_users_to_login(client, comparison):
    for url in _pages(comparison[0]):
        response = client.get(url)
        assert response.status_code == 302, url
        assert reverse("login") in response["Location"]


@pytest.mark.django_db
def test_it_forbids_assessors_who_are_not_organisers(client, comparison):
    client.force_login(UserFactory())
    for url in _pages(comparison[0]):
        assert client.get(url).status_code == 403, url


@pytest.mark.django_db
def test_the_live_data_refuses_anyone_but_organisers_in_the_error_shape(client, comparison):
    url = reverse("judging:agreement-live-data", args=[comparison[0].name])

    anonymous = client.get(url)
    client.force_login(UserFactory())
    assessor = client.get(url)

    assert (anonymous.status_code, anonymous.json()["code"]) == (403, "not_authenticated")
    assert (assessor.status_code, assessor.json()["code"]) == (403, "permission_denied")


@pytest.mark.django_db
@pytest.mark.parametrize("task", ["vibes", "relevance\u0000", "x" * 10_000])
def test_the_live_data_refuses_a_task_it_does_not_know_by_field(client, comparison, task):
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:agreement-live-data", args=[comparison[0].name]), {"task": task})

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert list(response.json()["fields"]) == ["task"]


@pytest.mark.django_db
def test_it_shows_the_comparison_page_to_organisers(client, comparison):
    collection, a, b, query = comparison
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:agreement-report", args=[collection.name]), query)
    assert response.status_code == 200
    page = response.content.decode()
    assert f"{cohen_kappa_score(GRADES_A, GRADES_B):.3f}" in page
    assert "nist &lt;b&gt;" in page and "nist <b>" not in page
    assert "confusion.svg" in page and "Per topic" in page and "Binary view" in page


@pytest.mark.django_db
def test_it_downloads_json_csv_and_charts(client, comparison):
    collection, a, b, query = comparison
    client.force_login(OrganiserFactory())

    def get(kind):
        return client.get(reverse("judging:agreement-download", args=[collection.name, kind]), query)

    response = get("report.json")
    assert response.status_code == 200
    data = response.json()
    assert data["judges"] == [a.name, b.name] and data["n"] == len(GRADES_A)
    assert data["cohen_kappa"] == pytest.approx(cohen_kappa_score(GRADES_A, GRADES_B))
    assert data["weighted_kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(GRADES_A, GRADES_B, weights="quadratic")
    )
    assert len(data["per_topic"]) == 3
    response = get("report.csv")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert rows[0]["topic"] == "all" and float(rows[0]["cohen_kappa"]) == pytest.approx(data["cohen_kappa"])
    response = get("confusion.csv")
    assert response.status_code == 200
    assert list(csv.reader(io.StringIO(response.content.decode())))[1] == ["0", "2", "0", "0", "0", "0"]
    response = get("confusion.svg")
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert response.content.lstrip().startswith(b"<?xml") and b"<script" not in response.content
    response = get("confusion.png")
    assert response.status_code == 200 and response.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert get("nothing.exe").status_code == 404


@pytest.mark.django_db
def test_it_answers_400_with_the_reason_for_bad_input(client, comparison):
    collection, a, b, query = comparison
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-download", args=[collection.name, "report.json"])
    response = client.get(url, {**query, "a": "ghost"})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and "a:" in response.json()["detail"]
    assert list(response.json()["fields"]) == ["a"]
    response = client.get(url, {**query, "task": "ptkb"})
    assert response.status_code == 400 and "relevance only" in response.json()["detail"]
    lonely = JudgeFactory()
    response = client.get(url, {**query, "b": lonely.name})
    assert response.status_code == 400 and "share no labelled relevance units" in response.json()["detail"]
    page = client.get(
        reverse("judging:agreement-report", args=[collection.name]), {**query, "b": lonely.name}
    )
    assert page.status_code == 400 and "share no labelled relevance units" in page.content.decode()


@pytest.mark.django_db
def test_it_shows_the_campaign_report(client, comparison):
    collection, a, b, _query = comparison
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:agreement-campaign", args=[collection.name]))
    assert response.status_code == 200
    page = response.content.decode()
    assert (
        "Passage relevance (0-4)" in page
        and "PTKB statement relevance" in page
        and "Crowd nugget-to-response" in page
    )
    assert f"{cohen_kappa_score(GRADES_A, GRADES_B):.3f}" in page
    data = client.get(
        reverse("judging:agreement-campaign", args=[collection.name]), {"format": "json"}
    ).json()
    relevance = data["sections"][0]
    assert [row["judges"] for row in relevance["rows"]] == [[a.name, b.name]]


@pytest.mark.django_db
def test_it_gives_live_agreement_of_each_assessor_with_the_llm_and_the_others(client, comparison):
    collection, _a, llm, _query = comparison
    turn = collection.turns.first()
    first, second = AssessorJudgeFactory(), AssessorJudgeFactory()
    pids = list(llm.relevancejudgments.filter(turn=turn).values_list("passage_id", "grade"))
    for pid, grade in pids:
        RelevanceJudgmentFactory(judge=first, turn=turn, passage_id=pid, grade=grade)
    RelevanceJudgmentFactory(judge=second, turn=turn, passage_id=pids[0][0], grade=(pids[0][1] + 1) % 5)
    client.force_login(OrganiserFactory())
    response = client.get(
        reverse("judging:agreement-live-data", args=[collection.name]), {"task": "relevance"}
    )
    assert response.status_code == 200
    rows = {row["judge"]: row for row in response.json()["assessors"]}
    assert rows[first.name]["labels"] == len(pids)
    assert rows[first.name]["llm"][0]["judge"] == llm.name
    assert (
        rows[first.name]["llm"][0]["n"] == len(pids) and rows[first.name]["llm"][0]["exact_agreement"] == 1.0
    )
    assert rows[first.name]["assessors"]["n"] == 1 and rows[first.name]["assessors"]["exact_agreement"] == 0.0
    assert rows[second.name]["assessors"]["n"] == 1
    bad = client.get(reverse("judging:agreement-live-data", args=[collection.name]), {"task": "vibes"})
    assert bad.status_code == 400 and "unknown task" in bad.json()["detail"]
    assert bad.json()["code"] == "invalid" and list(bad.json()["fields"]) == ["task"]


@pytest.mark.django_db
def test_the_judge_lists_offer_only_judges_of_the_chosen_task_in_the_collection(client, comparison):
    collection, a, b, _query = comparison
    elsewhere = JudgeFactory(name="other-collection-judge")
    RelevanceJudgmentFactory(judge=elsewhere, passage_id="x")  # a turn of another collection
    JudgeFactory(name="no-labels")
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-report", args=[collection.name])

    page = client.get(url).content.decode()
    for judge in (a, b):
        assert f'<option value="{judge.name.replace("<", "&lt;").replace(">", "&gt;")}"' in page
    assert "other-collection-judge" not in page and "no-labels" not in page

    # The task alone (the page reloads so when the task changes) lists that task's judges: none here.
    response = client.get(url, {"task": "ptkb"})
    assert response.status_code == 200
    assert "gpt-4o" not in response.content.decode().split('id="id_a"')[1].split("</select>")[0]
