"""The organisers' LLM jobs page: who may see it, starting a job, live progress."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from annotation.models import NtnJudgment, Nugget, RelevanceJudgment
from judging.machine.jobs.state import jobs_read
from judging.machine.tasks import judge_job_queue
from judging.models import JudgeJob, LlmCall
from tests.background import IMMEDIATE, tasks_run_ready
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    OrganiserFactory,
    PassageFactory,
    RankingFactory,
    TurnFactory,
    UserFactory,
)
from tests.judging.nli_model import build_tiny_nli_model

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


def _paid_calls(job, n, cost):
    """The job's call rows: its call and cost totals are read from them."""
    for i in range(n):
        LlmCall.objects.create(
            key=f"{job.pk}-{i}",
            model=job.model,
            prompt_version=job.prompt_version,
            prompt=f"p{i}",
            answer="Grade: 1",
            cost_usd=cost / n,
            job=job,
        )


@pytest.fixture
def job_with_calls(job):
    from decimal import Decimal

    _paid_calls(job, 8, Decimal("0.012344"))
    return job


@pytest.fixture
def jobs_inline(settings):
    """Jobs started from the page run to their end before the test goes on (the immediate backend),
    inside the test's transaction; test_a_job_started_from_the_page_runs_after_the_page_returns pins the
    queue and its worker."""
    settings.TASKS = IMMEDIATE


def test_anonymous_users_are_sent_to_log_in(client, job):
    response = client.get(reverse("judging:job-list"))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]
    progress = client.get(reverse("judging:job-progress", args=[job.pk]))
    assert progress.status_code == 403
    assert progress.json()["code"] == "not_authenticated"


def test_assessors_may_not_see_or_start_jobs(client, job):
    client.force_login(UserFactory())
    assert client.get(reverse("judging:job-list")).status_code == 403
    progress = client.get(reverse("judging:job-progress", args=[job.pk]))
    assert progress.status_code == 403
    assert progress.json()["code"] == "permission_denied"
    assert client.post(reverse("judging:job-start"), {}).status_code == 403
    assert JudgeJob.objects.count() == 1


def test_organisers_see_jobs_with_progress_and_cost_escaped(client, job_with_calls):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:job-list"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "gpt-4o &lt;judge&gt;" in html and "<judge>" not in html
    assert '<span data-field="units_done">10</span>/<span data-field="units_total">40</span>' in html
    assert '<td data-field="cost_usd">0.0123</td>' in html


def test_progress_json_gives_the_live_counts(client, job_with_calls):
    job = job_with_calls
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:job-progress", args=[job.pk]))
    assert response.status_code == 200
    assert response.json() == {
        "id": job.pk,
        "status": "running",
        "status_text": "running",
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


def test_organisers_start_a_job_that_runs_and_labels(
    client, fake_openai, django_capture_on_commit_callbacks, jobs_inline
):
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
    job = JudgeJob.objects.get()
    assert response["Location"] == reverse("judging:job-detail", args=[job.pk])
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


def test_job_detail_shows_its_options_as_a_list_of_names_and_values(client, job):
    job.options = {"turns": ["9_1", "9_2"], "depth": 30, "gold_judge": "<b>gold</b>", "exact_only": True}
    job.save(update_fields=["options"])
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:job-detail", args=[job.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    options = html[html.index('<dl class="job-options"') : html.index("</dl>")]
    pairs = re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", options)
    assert pairs == [
        ("depth", "30"),
        ("exact_only", "yes"),
        ("gold_judge", "&lt;b&gt;gold&lt;/b&gt;"),
        ("turns", "9_1, 9_2"),
    ]
    assert "{&#x27;" not in html and "[&#x27;" not in html  # no str() of the dict or a list


def test_job_detail_says_when_a_job_has_no_options(client, job):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:job-detail", args=[job.pk]))
    assert response.status_code == 200
    assert '<p class="muted" id="job-options">None.</p>' in response.content.decode()


# --- NLI jobs from the page -------------------------------------------------------------------------


@pytest.fixture
def dedup_source():
    collection = CollectionFactory(name="dups")
    turn = TurnFactory(topic__collection=collection)
    source = JudgeFactory(name="llm-gold", kind="llm")
    NuggetFactory(judge=source, turn=turn, key="[1]", text="Paris is the capital of France.")
    NuggetFactory(judge=source, turn=turn, key="[2]", text="PARIS is the capital of France!")
    NuggetFactory(judge=source, turn=turn, key="[3]", text="The museum opens at nine.")
    return collection, turn, source


DEDUP_POST = {
    "collection": "dups",
    "task": "dedup",
    "judge_name": "llm-gold-dedup",
    "source_judge": "llm-gold",
    "exact_only": "on",
}


def test_only_organisers_may_start_an_nli_job(client, dedup_source):
    assert client.post(reverse("judging:job-start"), DEDUP_POST).status_code == 302  # to log in
    client.force_login(UserFactory())
    assert client.post(reverse("judging:job-start"), DEDUP_POST).status_code == 403
    assert not JudgeJob.objects.exists()
    assert not Nugget.objects.filter(judge__name="llm-gold-dedup").exists()


def test_organisers_start_a_dedup_job_and_watch_its_counts(
    client, dedup_source, django_capture_on_commit_callbacks, jobs_inline
):
    _, turn, source = dedup_source
    client.force_login(OrganiserFactory())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("judging:job-start"), DEDUP_POST)
    assert response.status_code == 302
    job = JudgeJob.objects.get()
    progress = client.get(reverse("judging:job-progress", args=[job.pk])).json()
    assert (progress["status"], progress["units_done"], progress["units_total"]) == ("done", 1, 1)
    assert progress["summary"] == (
        "1 turn (0 already done), 3 nuggets: 1 exact and 0 entailment duplicates, 2 kept"
    )
    assert (job.task, job.model, job.options) == (
        "dedup",
        "",
        {"source_judge": "llm-gold", "exact_only": True},
    )
    assert list(Nugget.objects.filter(judge__name="llm-gold-dedup").values_list("key", flat=True)) == [
        "[1]",
        "[3]",
    ]
    page = client.get(reverse("judging:job-list")).content.decode()
    assert "Nugget de-duplication (NLI)" in page


def test_organisers_start_an_ntn_job_with_a_local_nli_model(
    client, tmp_path, django_capture_on_commit_callbacks, jobs_inline
):
    collection = CollectionFactory(name="cone")
    turn = TurnFactory(topic__collection=collection)
    gold, extractor = JudgeFactory(name="gold"), JudgeFactory(name="extractor", kind="llm")
    NuggetFactory(judge=gold, turn=turn, text="Paris is the capital of France.")
    NuggetFactory(judge=extractor, turn=turn, text="The capital of France is Paris.")
    NuggetFactory(judge=extractor, turn=turn, text="The museum opens at nine.")
    model_dir = build_tiny_nli_model(tmp_path / "tiny")
    client.force_login(OrganiserFactory())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("judging:job-start"),
            {
                "collection": "cone",
                "task": "ntn",
                "judge_name": "nli:web",
                "model": str(model_dir),
                "gold_judge": "gold",
                "response_nugget_judge": "extractor",
                "threshold": "0.4",
            },
        )
    assert response.status_code == 302
    job = JudgeJob.objects.get()
    assert (job.task, job.status, job.units_done, job.calls_made, job.cache_hits) == ("ntn", "done", 1, 2, 0)
    labels = NtnJudgment.objects.filter(judge__name="nli:web")
    assert labels.count() == 2
    assert all(label.entails == (label.score >= 0.4) for label in labels)


def test_an_ntn_job_without_its_judges_answers_400_with_the_reason(client, dedup_source):
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("judging:job-start"),
        {"collection": "dups", "task": "ntn", "judge_name": "nli:web", "gold_judge": "llm-gold"},
    )
    assert response.status_code == 400
    assert "needs the judge of the response nuggets" in response.content.decode()
    assert not JudgeJob.objects.exists()


def test_an_nli_job_whose_model_does_not_load_fails_on_the_page_not_with_a_500(
    client, dedup_source, tmp_path, django_capture_on_commit_callbacks, jobs_inline
):
    client.force_login(OrganiserFactory())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("judging:job-start"), {**DEDUP_POST, "exact_only": "", "model": str(tmp_path)}
        )
    assert response.status_code == 302
    job = JudgeJob.objects.get()
    assert job.status == "failed"
    assert "cannot load the NLI model" in job.error
    detail = client.get(reverse("judging:job-detail", args=[job.pk]))
    assert detail.status_code == 200
    assert "cannot load the NLI model" in detail.content.decode()


# --- Honest status on the page, and jobs outside the request ----------------------------------------


def test_a_running_job_without_a_sign_of_life_shows_as_interrupted(client, job_with_calls, settings):
    settings.JOB_STALE_AFTER_S = 60
    JudgeJob.objects.filter(pk=job_with_calls.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    client.force_login(OrganiserFactory())
    progress = client.get(reverse("judging:job-progress", args=[job_with_calls.pk]))
    assert progress.status_code == 200
    assert progress.json()["status"] == "interrupted"
    assert "Resume it to go on" in progress.json()["status_text"]
    page = client.get(reverse("judging:job-list")).content.decode()
    assert '<span data-field="status">interrupted</span>' in page
    assert reverse("judging:job-resume", args=[job_with_calls.pk]) in page
    assert JudgeJob.objects.get(pk=job_with_calls.pk).status == "running"  # reading changes nothing


def test_a_waiting_job_whose_task_failed_without_finishing_it_shows_as_interrupted(client, job):
    # Its worker died between taking the task and saving a first sign of life: no need to wait for the
    # row to go stale, the queue says the task is over.
    job = judge_job_queue(job=job)
    assert job.status == "pending"
    client.force_login(OrganiserFactory())
    assert client.get(reverse("judging:job-progress", args=[job.pk])).json()["status"] == "pending"
    DBTaskResult.objects.filter(id=job.task_id).update(status="FAILED")
    progress = client.get(reverse("judging:job-progress", args=[job.pk]))
    assert progress.status_code == 200
    assert progress.json()["status"] == "interrupted"
    DBTaskResult.objects.filter(id=job.task_id).delete()  # the queue lost it: the same
    detail = client.get(reverse("judging:job-detail", args=[job.pk])).content.decode()
    assert "Interrupted: no progress saved since" in detail
    assert reverse("judging:job-resume", args=[job.pk]) in detail


def test_a_job_whose_task_ended_after_its_row_was_read_shows_its_end_not_interrupted(job):
    # A page reads the job, then the queue; a task that saved the job's end and then ended in between
    # must not make the job look interrupted (the row is read again when its task is gone).
    job = judge_job_queue(job=job)
    stale = JudgeJob.objects.get(pk=job.pk)
    JudgeJob.objects.filter(pk=job.pk).update(status="done", units_done=2, units_total=2)
    DBTaskResult.objects.filter(id=job.task_id).update(status="SUCCESSFUL")

    (read,) = jobs_read([stale])

    assert (read.state, read.job.units_done) == ("done", 2)


def test_resuming_an_interrupted_job_queues_it_again_and_the_worker_finishes_it(
    client, fake_openai, settings
):
    fake_openai.responder = lambda prompt: "Grade: 2"
    collection = CollectionFactory(name="again")
    turn = TurnFactory(topic__collection=collection)
    PassageFactory(collection=collection, passage_id="p:1", text="Some text.")
    RankingFactory(run__collection=collection, turn=turn, passage_ids=["p:1"])
    client.force_login(OrganiserFactory())
    client.post(reverse("judging:job-start"), {"collection": "again", "task": "relevance", "judge_name": "r"})
    job = JudgeJob.objects.get()
    first_task = job.task_id
    # Its worker took it and died (SIGKILL: the task stays "running" in the queue, the row goes silent).
    DBTaskResult.objects.filter(id=first_task).update(status="RUNNING")
    JudgeJob.objects.filter(pk=job.pk).update(
        status="running", updated_at=timezone.now() - timedelta(hours=1)
    )
    response = client.post(reverse("judging:job-resume", args=[job.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("judging:job-detail", args=[job.pk])
    job.refresh_from_db()
    assert (job.status, job.task_id != first_task) == ("pending", True)
    assert DBTaskResult.objects.get(id=first_task).status == "FAILED"  # the dead worker's, said so
    assert tasks_run_ready() == 1
    job.refresh_from_db()
    assert (job.status, job.units_done, job.calls_made) == ("done", 1, 1)
    assert RelevanceJudgment.objects.filter(judge__name="r").count() == 1


def test_a_job_that_waits_runs_or_is_done_is_not_resumed(client, job):
    client.force_login(OrganiserFactory())
    job = judge_job_queue(job=job)
    for status in ("pending", "running", "done"):
        JudgeJob.objects.filter(pk=job.pk).update(status=status, updated_at=timezone.now())
        DBTaskResult.objects.filter(id=job.task_id).update(status="READY")
        response = client.post(reverse("judging:job-resume", args=[job.pk]), follow=True)
        assert response.status_code == 200
        assert (
            f"job {job.pk} is {status}: only an interrupted or failed job resumes"
            in response.content.decode()
        )
        assert DBTaskResult.objects.count() == 1  # nothing queued
    assert client.get(reverse("judging:job-resume", args=[job.pk])).status_code == 405
    client.force_login(UserFactory())
    assert client.post(reverse("judging:job-resume", args=[job.pk])).status_code == 403


def test_a_job_with_failures_says_so_first_on_its_page(client, job):
    JudgeJob.objects.filter(pk=job.pk).update(
        status="done", units_failed=3, error="3 of 40 units failed (most often: LLM call failed)"
    )
    client.force_login(OrganiserFactory())
    detail = client.get(reverse("judging:job-detail", args=[job.pk]))
    assert detail.status_code == 200
    assert (
        '<p id="job-status"><strong>Done with failures: 3 of 40 units failed (most often: LLM call failed)'
        in detail.content.decode()
    )


def test_a_job_started_from_the_page_runs_after_the_page_returns(client, fake_openai, settings):
    settings.LLM_TIMEOUT = 10.0
    fake_openai.responder = lambda prompt: "Grade: 3"
    fake_openai.latency = 1.5
    collection = CollectionFactory(name="slow")
    turn = TurnFactory(topic__collection=collection)
    PassageFactory(collection=collection, passage_id="p:1", text="Some text.")
    RankingFactory(run__collection=collection, turn=turn, passage_ids=["p:1"])
    client.force_login(OrganiserFactory())
    began = time.monotonic()
    response = client.post(
        reverse("judging:job-start"), {"collection": "slow", "task": "relevance", "judge_name": "bg"}
    )
    took = time.monotonic() - began
    assert response.status_code == 302
    assert took < 1.0  # the model takes 1.5 s to answer: the page did not wait for it
    assert fake_openai.answered == []
    job = JudgeJob.objects.get()
    assert job.status == "pending"
    # The job waits in the queue for a worker, as its task.
    assert DBTaskResult.objects.get(id=job.task_id).task_path == "judging.machine.tasks.judge_job_run_task"
    assert tasks_run_ready() == 1  # the worker's own loop, here
    job = JudgeJob.objects.get()
    assert (job.status, job.units_done, job.calls_made) == ("done", 1, 1)
    assert RelevanceJudgment.objects.get(judge__name="bg").grade == 3
    assert DBTaskResult.objects.get(id=job.task_id).status == "SUCCESSFUL"


def test_the_same_work_started_twice_while_it_waits_is_queued_once(client, fake_openai):
    fake_openai.responder = lambda prompt: "Grade: 1"
    collection = CollectionFactory(name="twice")
    turn = TurnFactory(topic__collection=collection)
    PassageFactory(collection=collection, passage_id="p:1", text="Some text.")
    RankingFactory(run__collection=collection, turn=turn, passage_ids=["p:1"])
    client.force_login(OrganiserFactory())
    form = {"collection": "twice", "task": "relevance", "judge_name": "twice"}
    for _ in range(2):
        response = client.post(reverse("judging:job-start"), form)
        assert response.status_code == 302
    job = JudgeJob.objects.get()
    assert DBTaskResult.objects.count() == 1  # the second start found the job waiting for its task
    assert str(DBTaskResult.objects.get().id) == job.task_id
    assert tasks_run_ready() == 1
    assert RelevanceJudgment.objects.filter(judge__name="twice").count() == 1
