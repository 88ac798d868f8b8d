"""The agreement pages on stored reports, with the database queue the task workers read: a first view
queues the report and answers at once, the worker computes it, the next view shows the same figures the
in-request report gives; a label written afterwards (through its family's writer or the assessors' grade
statement) makes the next view compute again and never show the old figures as current."""

import re

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_tasks_db.models import DBTaskResult
from rest_framework.authtoken.models import Token

from annotation.models import RelevanceJudgment
from annotation.relevance.writer import relevance_judgment_submit
from core.revisions import revisions_read
from judging.agreement.reports import campaign_report, comparison_report, confusion_rows, rank_report
from judging.models import ReportResult
from tests.background import tasks_run_ready
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
    relevance_campaign,
)

pytestmark = pytest.mark.django_db

GRADES_A = [0, 1, 2, 3, 4, 2, 1, 0, 3, 2, 2, 1]
GRADES_B = [0, 1, 3, 3, 4, 2, 0, 0, 2, 2, 1, 1]
ORDERS = [[f"p{i}" for i in range(12)][k:] + [f"p{i}" for i in range(12)][:k] for k in (0, 3, 6, 9)]


@pytest.fixture
def judged():
    collection = CollectionFactory()
    turns = [TurnFactory(topic=TopicFactory(collection=collection)) for _ in range(3)]
    a, b = JudgeFactory(name="nist"), JudgeFactory(name="gpt-4o")
    for i, (ga, gb) in enumerate(zip(GRADES_A, GRADES_B, strict=True)):
        RelevanceJudgmentFactory(judge=a, turn=turns[i % 3], passage_id=f"p{i}", grade=ga)
        RelevanceJudgmentFactory(judge=b, turn=turns[i % 3], passage_id=f"p{i}", grade=gb)
    for k, order in enumerate(ORDERS):
        run = RunFactory(collection=collection, name=f"run-{k}")
        for turn in turns:
            RankingFactory(run=run, turn=turn, passage_ids=order)
    return collection, turns, a, b


def _between(body, start, end):
    begin = body.index(start)
    return body[begin : body.index(end, begin) + len(end)]


def _comparison(client, collection, a, b):
    return client.get(
        reverse("judging:agreement-report", args=[collection.name]),
        {"task": "relevance", "a": a.name, "b": b.name},
    )


def test_the_comparison_answers_computing_then_the_figures_the_in_request_report_gives(client, judged):
    collection, _turns, a, b = judged
    client.force_login(OrganiserFactory())

    first = _comparison(client, collection, a, b)
    body = first.content.decode()
    assert first.status_code == 200
    assert "waiting for a task worker" in body and '<meta http-equiv="refresh" content="2">' in body
    assert 'id="fig-n"' not in body and "beside.svg" not in body
    assert tasks_run_ready() == 1
    shown = _comparison(client, collection, a, b).content.decode()

    report = comparison_report(collection=collection, task="relevance", judge_a=a, judge_b=b)
    figures = render_to_string(
        "agreement/_figures.html", {"report": report, "confusion_rows": confusion_rows(report)}
    )
    assert figures.strip() and figures in shown
    ranking = rank_report(collection=collection, measure="ndcg@5", judge_a=a, judge_b=b)
    tau = "n/a" if ranking["kendall_tau_b"] is None else f"{ranking['kendall_tau_b']:.3f}"
    assert f'<strong id="fig-beside-tau">{tau}</strong>' in shown
    assert "report-status" not in shown and "<meta http-equiv" not in shown and "beside.svg" in shown


def test_the_ranking_page_shows_the_in_request_ranking(client, judged):
    collection, _turns, a, b = judged
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-ranking", args=[collection.name])
    query = {"measure": "ndcg@5", "a": a.name, "b": b.name}

    assert "Computing" in client.get(url, query).content.decode()
    tasks_run_ready()
    shown = client.get(url, query).content.decode()

    expected = rank_report(collection=collection, measure="ndcg@5", judge_a=a, judge_b=b)
    assert expected["n_runs"] == 4
    rows = re.findall(r"<tr><td>(run-\d)</td><td>([\d.]+)</td><td>([\d.]+)</td>", shown)
    assert rows == [(r["run"], f"{r['score_a']:.4f}", f"{r['score_b']:.4f}") for r in expected["runs"]]
    tau = "n/a" if expected["kendall_tau_b"] is None else f"{expected['kendall_tau_b']:.3f}"
    assert f'<strong id="fig-tau">{tau}</strong>' in shown


def test_the_campaign_report_shows_the_in_request_report_and_its_json_is_the_stored_one(client, judged):
    collection, *_ = judged
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-campaign", args=[collection.name])

    waiting = client.get(url).content.decode()
    assert "Computing" in waiting and '<div class="sections">\n  \n  </div>' in waiting
    tasks_run_ready()
    shown = client.get(url).content.decode()

    direct = render_to_string("agreement/campaign.html", {"report": campaign_report(collection=collection)})
    # Every pair fits a page here: the page's tables are the whole report's.
    tables = re.compile(r"<h2>.*?</h2>|<p class=\"muted section-total\">.*?</p>|<tbody>.*?</tbody>", re.S)
    assert tables.findall(shown) == tables.findall(direct) and "<tbody>" in shown
    stored = ReportResult.objects.get(kind="agreement-campaign").result
    with CaptureQueriesContext(connection) as queries:
        data = client.get(url, {"format": "json"}).json()
    assert data == stored and len(queries) <= 6  # the session, user, collection, revisions, the row


def test_a_label_written_after_the_report_makes_the_next_view_compute_again_and_the_old_figure_is_labelled(
    client, judged
):
    collection, turns, a, b = judged
    client.force_login(OrganiserFactory())
    _comparison(client, collection, a, b)
    tasks_run_ready()
    before = _comparison(client, collection, a, b).content.decode()
    n_before = re.search(r'id="fig-n">(\d+)<', before).group(1)

    relevance_judgment_submit(judge=a, turn=turns[0], passage_id="p-new", grade=3)
    relevance_judgment_submit(judge=b, turn=turns[0], passage_id="p-new", grade=3)
    after = _comparison(client, collection, a, b).content.decode()

    assert "Computing" in after and '<meta http-equiv="refresh"' in after
    assert "before the latest changes; the current ones are being computed" in after
    assert re.search(r'id="fig-n">(\d+)<', after).group(1) == n_before
    assert "report.json" not in after and "beside.svg" not in after  # no download of old figures
    tasks_run_ready()
    current = _comparison(client, collection, a, b).content.decode()
    assert int(re.search(r'id="fig-n">(\d+)<', current).group(1)) == int(n_before) + 1
    assert "before the latest changes" not in current


def test_a_download_is_never_stale_computing_in_the_request_when_the_stored_figures_are_not_current(
    client, judged
):
    collection, turns, a, b = judged
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-download", args=[collection.name, "report.json"])
    query = {"task": "relevance", "a": a.name, "b": b.name}
    _comparison(client, collection, a, b)
    tasks_run_ready()
    assert client.get(url, query).json()["n"] == 12

    relevance_judgment_submit(judge=a, turn=turns[1], passage_id="p-new", grade=3)
    relevance_judgment_submit(judge=b, turn=turns[1], passage_id="p-new", grade=1)

    assert client.get(url, query).json()["n"] == 13


def test_two_views_queue_the_report_once(client, judged):
    collection, _turns, a, b = judged
    client.force_login(OrganiserFactory())

    _comparison(client, collection, a, b)
    _comparison(client, collection, a, b)

    assert ReportResult.objects.count() == 1 and DBTaskResult.objects.count() == 1


def test_a_grade_through_the_assessors_statement_makes_the_report_compute_again(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=3, n_ptkb=0)
    collection = assignment.pool.collection
    api = type(client)()
    api.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.create(user=alice).key}"
    nist = JudgeFactory(name="nist")

    def grade():
        step = api.post(
            reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json"
        ).json()
        RelevanceJudgment.objects.create(
            judge=nist, turn_id=step["turn_pk"], passage_id=step["passage_id"], grade=2
        )
        answer = api.post(
            reverse("relevance-api-grade", args=[step["slot"]]),
            {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 2},
            content_type="application/json",
        )
        assert answer.status_code == 201

    grade()
    client.force_login(OrganiserFactory())
    judge = RelevanceJudgment.objects.exclude(judge=nist).get().judge
    _comparison(client, collection, judge, nist)
    tasks_run_ready()
    assert 'id="fig-n">1<' in _comparison(client, collection, judge, nist).content.decode()
    # The nist label of the next pair is written first, so only the grade statement can change the figures.
    step = api.post(
        reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json"
    ).json()
    RelevanceJudgment.objects.create(
        judge=nist, turn_id=step["turn_pk"], passage_id=step["passage_id"], grade=2
    )
    _comparison(client, collection, judge, nist)
    tasks_run_ready()
    assert 'id="fig-n">1<' in _comparison(client, collection, judge, nist).content.decode()

    before = revisions_read(models=[RelevanceJudgment])
    answer = api.post(
        reverse("relevance-api-grade", args=[step["slot"]]),
        {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 2},
        content_type="application/json",
    )
    assert answer.status_code == 201
    assert revisions_read(models=[RelevanceJudgment]) != before  # the statement's own write is seen
    after = _comparison(client, collection, judge, nist).content.decode()
    assert "Computing" in after and "before the latest changes" in after
    tasks_run_ready()
    assert 'id="fig-n">2<' in _comparison(client, collection, judge, nist).content.decode()


def test_the_pages_make_as_many_queries_whatever_the_labels(client, judged, django_assert_num_queries):
    collection, _turns, a, b = judged
    small = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=small))
    for i in range(3):
        RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=f"p{i}", grade=i)
        RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=f"p{i}", grade=i)
    client.force_login(OrganiserFactory())
    counts = []
    for each in (small, collection):
        urls = [
            (
                reverse("judging:agreement-report", args=[each.name]),
                {"task": "relevance", "a": "nist", "b": "gpt-4o"},
            ),
            (
                reverse("judging:agreement-ranking", args=[each.name]),
                {"measure": "ndcg@5", "a": "nist", "b": "gpt-4o"},
            ),
            (reverse("judging:agreement-campaign", args=[each.name]), {}),
        ]
        for url, query in urls:
            client.get(url, query)
        tasks_run_ready()
        for url, query in urls:
            with CaptureQueriesContext(connection) as queries:
                client.get(url, query)
            counts.append(len(queries))
    assert counts[:3] == counts[3:]


def test_a_failed_report_says_why_and_offers_to_compute_again(client, judged):
    collection, _turns, a, b = judged
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-campaign", args=[collection.name])
    client.get(url)
    ReportResult.objects.update(compute="judging.agreement.stored.no_such_function")
    tasks_run_ready()

    failed = client.get(url).content.decode()

    assert "could not be computed" in failed and "ImportError" in failed
    assert 'id="report-again"' in failed and "<meta http-equiv" not in failed
