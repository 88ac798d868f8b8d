"""The organisers' LLM jobs page: who may see it, starting a job, live progress."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import RelevanceJudgment
from judging.models import JudgeJob
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    PassageFactory,
    RankingFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def job():
    collection = CollectionFactory(name="bikes")
    return JudgeJob.objects.create(
        collection=collection,
        judge=JudgeFactory(name="gpt-4o <judge>", kind="llm"),
        task="relevance",
        model="gpt-4o",
        prompt_version="relevance_v1",
        status="running",
        units_total=40,
        units_done=10,
        calls_made=8,
        cache_hits=2,
        cost_usd="0.012345",
    )


def test_anonymous_users_are_sent_to_log_in(client, job):
    response = client.get(reverse("judging:job-list"))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]
    assert client.get(reverse("judging:job-progress", args=[job.pk])).status_code == 302


def test_assessors_may_not_see_or_start_jobs(client, job):
    client.force_login(UserFactory())
    assert client.get(reverse("judging:job-list")).status_code == 403
    assert client.get(reverse("judging:job-progress", args=[job.pk])).status_code == 403
    assert client.post(reverse("judging:job-start"), {}).status_code == 403
    assert JudgeJob.objects.count() == 1


def test_organisers_see_jobs_with_progress_and_cost_escaped(client, job):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:job-list"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "gpt-4o &lt;judge&gt;" in html and "<judge>" not in html
    assert '<span data-field="units_done">10</span>/<span data-field="units_total">40</span>' in html
    assert '<td data-field="cost_usd">0.0123</td>' in html


def test_progress_json_gives_the_live_counts(client, job):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:job-progress", args=[job.pk]))
    assert response.status_code == 200
    assert response.json() == {
        "id": job.pk,
        "status": "running",
        "units_done": 10,
        "units_total": 40,
        "units_failed": 0,
        "percent": 25,
        "calls_made": 8,
        "cache_hits": 2,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": "0.0123",
        "summary": "",
    }


def test_organisers_start_a_job_that_runs_and_labels(client, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.responder = lambda prompt: "Grade: 2"
    collection = CollectionFactory(name="demo")
    turn = TurnFactory(topic__collection=collection)
    PassageFactory(collection=collection, passage_id="p:1", text="Some text.")
    RankingFactory(run__collection=collection, turn=turn, passage_ids=["p:1"])
    client.force_login(OrganiserFactory())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("judging:job-start"),
            {
                "collection": "demo",
                "task": "relevance",
                "judge_name": "web-judge",
                "depth": 10,
                "concurrency": 2,
            },
        )
    assert response.status_code == 302
    assert response["Location"] == reverse("judging:job-list")
    job = JudgeJob.objects.get()
    assert (job.status, job.units_done, job.calls_made, job.concurrency, job.options) == (
        "done",
        1,
        1,
        2,
        {"depth": 10},
    )
    assert RelevanceJudgment.objects.get(judge__name="web-judge").grade == 2


def test_starting_a_job_on_unknown_turns_answers_400_with_the_reason(client, fake_openai):
    CollectionFactory(name="demo")
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("judging:job-start"),
        {"collection": "demo", "task": "relevance", "judge_name": "j", "depth": 10, "turns": "99_9"},
    )
    assert response.status_code == 400
    assert "no turn 99_9" in response.content.decode()
    assert not JudgeJob.objects.exists()
    assert fake_openai.received == []


def test_job_detail_lists_failures(client, job):
    job.failures.create(unit="9_1 p:1", reason="unparsable answer: no grade", answer="<b>maybe</b>")
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:job-detail", args=[job.pk]))
    assert response.status_code == 200
    assert "&lt;b&gt;maybe&lt;/b&gt;" in response.content.decode()
