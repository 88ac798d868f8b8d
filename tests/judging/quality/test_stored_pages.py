"""judged@k, the judges page and the quality dashboard as stored reports: the page answers "computing", then the figures the in-request code gives;
a grade written after makes the next view compute again (the old figures labelled); two views queue once."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from judging.models import ReportResult
from judging.quality.judges.selectors import collection_judges
from judging.quality.runs.selectors import judged_at_k
from judging.quality.selectors import collection_quality
from tests.background import tasks_run_ready
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    PoolFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TurnFactory,
    UserFactory,
)
from tests.gold_campaign import gold_campaign, walk

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(client):
    collection = CollectionFactory()
    PoolFactory(collection=collection, depth=10)
    judge = JudgeFactory(name="nist")
    turns = [TurnFactory(topic__collection=collection) for _ in range(3)]
    for r in range(2):
        run = RunFactory(collection=collection, name=f"run-{r}")
        for t, turn in enumerate(turns):
            RankingFactory(run=run, turn=turn, passage_ids=[f"d{i}" for i in range(r + t, r + t + 12)])
    for turn in turns[:2]:
        for i in range(0, 14, 2):
            RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=f"d{i}", grade=1)
    client.force_login(OrganiserFactory())
    return collection, judge, turns


def _url(collection):
    return reverse("judging:quality-runs", args=[collection.name]) + "?judge=nist"


def test_the_page_answers_computing_then_the_in_request_figures(client, graded):
    collection, judge, _ = graded

    first = client.get(_url(collection))
    assert first.status_code == 200
    assert b'id="report-status"' in first.content and "rows" not in first.context
    tasks_run_ready()
    second = client.get(_url(collection))

    expected = judged_at_k(collection=collection, judge_id=judge.pk, judge_name="nist", depth=10)
    rows = second.context["rows"]
    assert b'id="report-status"' not in second.content
    assert [row["run"] for row in rows] == [row.run for row in expected]
    for row, want in zip(rows, expected, strict=True):
        assert dict(row["judged"]) == {k: pytest.approx(v) for k, v in want.judged.items()}
        assert row["unjudged_within_depth"] == want.unjudged_within_depth
    assert second.context["judge"] == "nist" and second.context["depth"] == 10


def test_a_grade_written_after_makes_the_next_view_compute_again(client, graded):
    collection, judge, turns = graded
    client.get(_url(collection))
    tasks_run_ready()
    RelevanceJudgmentFactory(judge=judge, turn=turns[2], passage_id="d2", grade=2)

    response = client.get(_url(collection))

    assert not response.context["stored"].done
    assert response.context["stored"].earlier is not None
    assert b"before the latest changes" in response.content
    tasks_run_ready()
    again = client.get(_url(collection))
    assert again.context["stored"].done
    assert [row["topics_judged"] for row in again.context["rows"]] == [3, 3]


def test_two_views_queue_the_report_once(client, graded):
    collection, _, _ = graded

    client.get(_url(collection))
    client.get(_url(collection))

    assert ReportResult.objects.filter(kind="quality-judged").count() == 1
    assert DBTaskResult.objects.count() == 1


def test_the_download_is_never_stale(client, graded):
    collection, judge, turns = graded
    url = reverse("judging:quality-runs-download", args=[collection.name]) + "?judge=nist"
    before = client.get(url).content.decode()
    RelevanceJudgmentFactory(judge=judge, turn=turns[2], passage_id="d2", grade=2)

    after = client.get(url).content.decode()

    assert before != after
    assert ",3,3," in after.splitlines()[1]


def test_the_judges_page_answers_computing_then_the_in_request_rows_and_recomputes_after_a_grade(
    client, graded
):
    collection, judge, turns = graded
    url = reverse("judging:quality-judges", args=[collection.name])

    first = client.get(url)
    assert b'id="report-status"' in first.content and b'id="judges-table"' not in first.content
    tasks_run_ready()
    second = client.get(url)
    expected = collection_judges(collection=collection)
    assert [
        (line["row"].judge.name, line["row"].labels, line["row"].last_label)
        for line in second.context["lines"]
    ] == [(row.judge.name, row.labels, row.last_label) for row in expected]
    RelevanceJudgmentFactory(judge=judge, turn=turns[2], passage_id="d2", grade=2)
    third = client.get(url)
    assert not third.context["stored"].done and b"before the latest changes" in third.content


def test_the_dashboard_answers_computing_then_the_in_request_figures_and_shows_a_pause_at_once(client):
    alice = UserFactory(username="alice")
    planted = gold_campaign(assessors=[alice], redundancy=1, n_turns=2)
    walk(alice, planted.assignment, lambda pair: 1)
    collection = planted.assignment.pool.collection
    client.force_login(OrganiserFactory())
    url = reverse("judging:quality-dashboard", args=[collection.name])

    first = client.get(url)
    assert b'id="report-status"' in first.content and first.context["assessors"] == []
    assert b'id="quality-empty"' not in first.content
    tasks_run_ready()
    second = client.get(url)
    expected = collection_quality(collection=collection)
    assert second.context["assessors"] == expected
    client.post(reverse("judging:quality-pause", args=[collection.name, "alice"]))
    third = client.get(url)
    assert third.context["stored"].done and third.context["assessors"][0].paused
