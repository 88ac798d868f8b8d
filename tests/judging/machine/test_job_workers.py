"""Judge jobs on real task worker processes (`manage.py task_worker` on the test database): killed in the
middle, a job shows as interrupted at once and resumes from the Jobs page; a worker told to stop queues its
job again; a worker id a live worker holds is refused."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections import Counter

import factory
import pytest
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from annotation.models import RelevanceJudgment, SupportJudgment
from judging.machine.jobs import judge_job_start
from judging.machine.jobs.base import LOAD_BATCH
from judging.machine.jobs.state import INTERRUPTED, jobs_read
from judging.machine.tasks import judge_job_queue, judge_job_resume
from judging.models import JudgeJob, LlmCall
from tests.background import worker_batch, worker_env, worker_start
from tests.conftest import REPO
from tests.factories import (
    CollectionFactory,
    OrganiserFactory,
    PassageFactory,
    RankingFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TurnFactory,
)

pytestmark = [pytest.mark.django_db(transaction=True)]

UNITS = 12


def _until(condition, seconds: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def twelve_units():
    collection = CollectionFactory(name="kill")
    turn = TurnFactory(topic__collection=collection)
    ids = [f"p:{i}" for i in range(UNITS)]
    for pid in ids:
        PassageFactory(collection=collection, passage_id=pid, text=f"Passage {pid} about bikes.")
    RankingFactory(run=RunFactory(collection=collection), turn=turn, passage_ids=ids)
    return collection


@pytest.fixture
def env(fake_openai):
    fake_openai.responder = lambda prompt: "Grade: 2"
    fake_openai.latency = 0.2
    return worker_env(
        OPENAI_BASE_URL=fake_openai.url,
        OPENAI_API_KEY="sk-test",
        OPENAI_MODEL="gpt-4o-mini",
        LOG_LEVEL="ERROR",
    )


def _start(client) -> JudgeJob:
    response = client.post(
        reverse("judging:job-start"),
        {"collection": "kill", "task": "relevance", "judge_name": "killed", "concurrency": 1},
    )
    assert response.status_code == 302
    return JudgeJob.objects.get()


def _row(client, job: JudgeJob) -> str:
    page = client.get(reverse("judging:job-list"))
    assert page.status_code == 200
    row = re.search(rf'<tr data-job="{job.pk}".*?</tr>', page.content.decode(), re.S)
    assert row is not None
    return row.group(0)


def test_a_job_whose_worker_is_killed_shows_interrupted_at_once_and_resumes_from_the_page(
    client, twelve_units, env, fake_openai
):
    # JOB_STALE_AFTER_S keeps its default (120 s): only the worker's lock, gone with it, can tell.
    client.force_login(OrganiserFactory())
    job = _start(client)
    worker = worker_start(env)
    try:
        _until(lambda: len(fake_openai.answered) >= 4, what="the worker's first answers")
        assert '<span data-field="status">running</span>' in _row(client, job)  # alive: running
    finally:
        worker.kill()  # SIGKILL, in the middle of the job
        worker.wait(timeout=10)
    job.refresh_from_db()
    assert job.status == "running"  # it never got to say otherwise
    assert DBTaskResult.objects.get(id=job.task_id).status == "RUNNING"  # nor did its task
    paid = set(LlmCall.objects.filter(job=job).values_list("prompt", flat=True))
    assert 3 <= len(paid) < UNITS

    # PostgreSQL ends the dead worker's session, and its lock, as soon as it sees the socket closed.
    _until(
        lambda: '<span data-field="status">interrupted</span>' in _row(client, job),
        seconds=5,
        what="the job shown interrupted",
    )
    resume = reverse("judging:job-resume", args=[job.pk])
    assert f'action="{resume}"' in _row(client, job)

    response = client.post(resume)
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == "pending"
    asked_before = len(fake_openai.received)
    worker_batch(env)

    job.refresh_from_db()
    assert (job.status, job.units_done, job.units_total) == ("done", UNITS, UNITS)
    assert DBTaskResult.objects.get(id=job.task_id).status == "SUCCESSFUL"
    # Each unit judged once, and no answer stored before the kill paid for again.
    judged = Counter(
        RelevanceJudgment.objects.filter(judge__name="killed").values_list("passage_id", flat=True)
    )
    assert len(judged) == UNITS and set(judged.values()) == {1}
    assert LlmCall.objects.count() == UNITS
    assert not paid & {r.prompt for r in fake_openai.received[asked_before:]}
    # Asked again: at most the calls in flight at the kill (a runner keeps twice its concurrency going).
    assert len(fake_openai.received) <= UNITS + 2


@pytest.mark.parametrize("task", ["relevance", "support"])
def test_a_job_of_several_batches_killed_mid_way_resumes_and_labels_every_unit_once(env, fake_openai, task):
    # More units than one load batch (texts read, first calls looked up a batch at a time), eight calls in
    # flight, answers saved many at a time with the labels they give: what a TREC-sized job does, at a size
    # that runs in seconds. Relevance: passages ranked for a turn; support: answer sentences, each citing one.
    units = LOAD_BATCH + 100
    fake_openai.latency = 0.05
    collection = CollectionFactory(name="batches")
    turn = TurnFactory(topic__collection=collection)
    ids = [f"p:{i}" for i in range(units)]
    PassageFactory.create_batch(
        units, collection=collection, passage_id=factory.Iterator(ids), text=factory.Iterator(ids)
    )
    run = RunFactory(collection=collection)
    if task == "relevance":
        RankingFactory(run=run, turn=turn, passage_ids=ids)
        labels, options = RelevanceJudgment.objects, {"depth": units}
    else:
        fake_openai.responder = lambda prompt: "Full Support"
        ResponseSentenceFactory.create_batch(
            units,
            response=ResponseFactory(run=run, turn=turn),
            index=factory.Iterator(range(units)),
            text=factory.Iterator(ids),
            citations=factory.Iterator([[pid] for pid in ids]),
        )
        labels, options = SupportJudgment.objects, {}
    job = judge_job_start(
        collection=collection,
        task=task,
        judge_name="batched",
        model="gpt-4o-mini",
        options=options,
        concurrency=8,
    )
    judge_job_queue(job=job)
    worker = worker_start(env)
    try:
        _until(lambda: LlmCall.objects.count() >= units // 2, what="half the answers saved")
    finally:
        worker.kill()  # SIGKILL, in the middle of the job
        worker.wait(timeout=10)
    asked_before = len(fake_openai.received)
    saved = set(LlmCall.objects.values_list("prompt", flat=True))
    assert units // 2 <= len(saved) < units
    # Every label of the killed run came with its answer, in one transaction.
    assert labels.filter(judge__name="batched").count() == len(saved)

    _until(lambda: jobs_read([JudgeJob.objects.get(pk=job.pk)])[0].state == INTERRUPTED, what="interrupted")
    judge_job_resume(job=JudgeJob.objects.get(pk=job.pk))
    worker_batch(env)

    job.refresh_from_db()
    assert (job.status, job.units_done, job.units_total, job.calls_made) == ("done", units, units, units)
    judged = Counter(labels.filter(judge__name="batched").values_list("passage_id", flat=True))
    assert len(judged) == units and set(judged.values()) == {1}
    assert LlmCall.objects.count() == units
    # The resumed run asked for exactly the units whose answers the killed one had not saved.
    asked_again = [r.prompt for r in fake_openai.received[asked_before:]]
    assert len(asked_again) == units - len(saved) and not saved & set(asked_again)


def test_a_worker_told_to_stop_in_the_middle_queues_its_job_again(client, twelve_units, env, fake_openai):
    client.force_login(OrganiserFactory())
    job = _start(client)
    worker = worker_start(env)
    try:
        _until(lambda: len(fake_openai.answered) >= 3, what="the worker's first answers")
        worker.send_signal(signal.SIGTERM)  # finish the task in hand...
        time.sleep(0.3)
        worker.send_signal(signal.SIGTERM)  # ...no: stop it now
        worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
    job.refresh_from_db()
    first = (
        DBTaskResult.objects.filter(task_path="judging.machine.tasks.judge_job_run_task")
        .exclude(id=job.task_id)
        .get()
    )
    assert first.status == "FAILED"  # the stopped run's task
    assert (job.status, DBTaskResult.objects.get(id=job.task_id).status) == ("pending", "READY")

    worker_batch(env)
    job.refresh_from_db()
    assert (job.status, job.units_done) == ("done", UNITS)
    assert RelevanceJudgment.objects.filter(judge__name="killed").count() == UNITS


def test_a_worker_told_to_stop_once_stops_its_task_after_the_grace_and_queues_its_job_again(
    client, twelve_units, env, fake_openai
):
    fake_openai.latency = 1.0  # twelve units: longer than the grace
    client.force_login(OrganiserFactory())
    job = _start(client)
    worker = worker_start(env, "--grace", "0.5")
    try:
        _until(lambda: len(fake_openai.answered) >= 1, what="the worker's first answer")
        worker.send_signal(signal.SIGTERM)  # as a process manager stops it: once
        asked = time.monotonic()
        worker.wait(timeout=30)
        assert time.monotonic() - asked < 5  # not the ten seconds the rest of the job takes
    finally:
        if worker.poll() is None:
            worker.kill()
    job.refresh_from_db()
    runs = DBTaskResult.objects.filter(task_path="judging.machine.tasks.judge_job_run_task")
    assert runs.exclude(id=job.task_id).get().status == "FAILED"  # the stopped run's task
    assert (job.status, DBTaskResult.objects.get(id=job.task_id).status) == ("pending", "READY")


def test_a_worker_refuses_the_id_of_a_live_worker(env):
    first = worker_start(env, "--worker-id", "twin")
    try:
        _until(
            lambda: DBTaskResult.objects.filter(task_path="assay.upkeep.upkeep_daily").exists(),
            seconds=30,
            what="the first worker up (it queues the daily upkeep)",
        )
        second = subprocess.run(
            [sys.executable, "manage.py", "task_worker", "--worker-id", "twin", "--batch"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 1
        assert "worker id twin is taken by a live worker" in second.stderr
        assert first.poll() is None
    finally:
        first.kill()
        first.wait()
