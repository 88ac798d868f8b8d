"""The support leaderboard and the disagreement study as stored reports: a first view answers "computing",
the next the figures the in-request code gives; a label written after makes the next view compute again
(the old figures labelled as such); two views queue once; the study's JSON is never stale."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from annotation.models import Judge, SupportJudgment
from judging.measures.support import leaderboard
from judging.models import ReportResult
from judging.scores.support import support_scores
from tests.background import tasks_run_ready
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db


def _leaderboard(client):
    return client.get(reverse("support-leaderboard", args=["rag24"]), {"judge": "gpt-4o"})


def test_the_leaderboard_answers_computing_then_the_in_request_figures(client, rag, gpt):
    client.force_login(OrganiserFactory())

    first = _leaderboard(client)
    assert b'id="report-status"' in first.content and first.context["rows"] == []
    assert b"No run has answers" not in first.content
    tasks_run_ready()
    second = _leaderboard(client)

    expected = leaderboard(support_scores(collection=rag, judge=gpt), by="weighted_recall")
    assert b'id="report-status"' not in second.content
    assert [(r["run"], r["weighted_recall"]) for r in second.context["rows"]] == [
        (r.run, pytest.approx(r.weighted_recall)) for r in expected
    ]


def test_a_label_written_after_makes_the_leaderboard_compute_again(client, rag, gpt):
    client.force_login(OrganiserFactory())
    _leaderboard(client)
    tasks_run_ready()
    label = SupportJudgment.objects.filter(judge=gpt).first()
    SupportJudgment.objects.filter(pk=label.pk).update(label="NS" if label.label != "NS" else "FS")

    response = _leaderboard(client)

    assert not response.context["stored"].done and response.context["stored"].earlier is not None
    assert b"before the latest changes" in response.content
    tasks_run_ready()
    assert _leaderboard(client).context["stored"].done


def test_two_leaderboard_views_queue_once(client, rag, gpt):
    client.force_login(OrganiserFactory())

    _leaderboard(client)
    _leaderboard(client)

    assert ReportResult.objects.filter(kind="support-leaderboard").count() == 1
    assert DBTaskResult.objects.count() == 1


def test_the_study_answers_computing_then_its_rows_and_its_json_is_never_stale(client, study):
    client.force_login(OrganiserFactory())
    url = reverse("support-disagreements", args=["rag24"])
    llm = Judge.objects.get(name="gpt-4o")
    humans = list(
        Judge.objects.filter(supportjudgments__condition__in=["scratch", "post-edit"])
        .distinct()
        .order_by("name")
    )
    # A blind label so the study has a reassessment to report.
    first_human = SupportJudgment.objects.filter(judge=humans[0]).first()
    blind = Judge.objects.create(name="blind-reader", kind=Judge.Kind.LLM)
    SupportJudgment.objects.create(
        judge=blind,
        sentence=first_human.sentence,
        citation_index=first_human.citation_index,
        label="FS",
        condition="blind",
    )
    query = {"human": [h.name for h in humans], "llm": llm.name, "blind": blind.name}

    first = client.get(url, query)
    assert first.status_code == 200 and b'id="report-status"' in first.content and first.context["rows"] == []
    tasks_run_ready()
    second = client.get(url, query)
    assert [row["condition"] for row in second.context["rows"]] == ["scratch", "post-edit", "all"]
    assert second.context["rows"][-1]["units"] == 1

    SupportJudgment.objects.filter(judge=blind).update(label="NS")
    data = client.get(url, {**query, "format": "json"}).json()
    agrees = SupportJudgment.objects.get(pk=first_human.pk).label == "NS"
    assert data["all"]["agrees_with_human"]["agree"] == (1 if agrees else 0)
