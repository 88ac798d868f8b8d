"""Judge jobs on real task worker processes (PostgreSQL: a worker process reaches the test database):
killed in the middle, a job shows as interrupted and resumes from the Jobs page; a worker told to stop
queues its job again; the supervisor starts again a worker that dies."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from annotation.models import RelevanceJudgment
from judging.models import JudgeJob, LlmCall
from tests.background import worker_env, worker_start
from tests.conftest import REPO
from tests.factories import (
    CollectionFactory,
    OrganiserFactory,
    PassageFactory,
    RankingFactory,
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


def test_a_job_whose_worker_is_killed_shows_interrupted_and_resumes_from_the_page(
    client, twelve_units, env, fake_openai, settings
):
    settings.JOB_STALE_AFTER_S = 2
    client.force_login(OrganiserFactory())
    job = _start(client)
    worker = worker_start(env)
    try:
        _until(lambda: len(fake_openai.answered) >= 4, what="the worker's first answers")
    finally:
        worker.kill()  # SIGKILL, in the middle of the job
        worker.wait(timeout=10)
    job.refresh_from_db()
    assert job.status == "running"  # it never got to say otherwise
    assert DBTaskResult.objects.get(id=job.task_id).status == "RUNNING"  # nor did its task
    paid = set(LlmCall.objects.filter(job=job).values_list("prompt", flat=True))
    assert 3 <= len(paid) < UNITS

    # Silent for longer than JOB_STALE_AFTER_S: the Jobs page shows it interrupted, with a resume button.
    time.sleep(2.5)
    page = client.get(reverse("judging:job-list"))
    assert page.status_code == 200
    row = re.search(rf'<tr data-job="{job.pk}".*?</tr>', page.content.decode(), re.S)
    assert row is not None
    assert '<span data-field="status">interrupted</span>' in row.group(0)
    resume = reverse("judging:job-resume", args=[job.pk])
    assert f'action="{resume}"' in row.group(0)

    response = client.post(resume)
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == "pending"
    asked_before = len(fake_openai.received)
    finished = subprocess.run(
        [sys.executable, "manage.py", "db_worker", "--no-reload", "--batch", "--no-startup-delay"],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]

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
    first = DBTaskResult.objects.exclude(id=job.task_id).get()
    assert first.status == "FAILED"  # the stopped run's task
    assert (job.status, DBTaskResult.objects.get(id=job.task_id).status) == ("pending", "READY")

    finished = subprocess.run(
        [sys.executable, "manage.py", "db_worker", "--no-reload", "--batch", "--no-startup-delay"],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    job.refresh_from_db()
    assert (job.status, job.units_done) == ("done", UNITS)
    assert RelevanceJudgment.objects.filter(judge__name="killed").count() == UNITS


def _children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(proc.name))
    return found


def test_the_supervisor_starts_again_a_worker_that_dies_and_stops_them_all(env):
    supervisor = subprocess.Popen(
        [sys.executable, "manage.py", "task_workers", "--processes", "2", "--grace", "1"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        _until(lambda: len(_children(supervisor.pid)) == 2, seconds=30, what="two workers")
        first = sorted(_children(supervisor.pid))
        os.kill(first[0], signal.SIGKILL)
        _until(
            lambda: len(_children(supervisor.pid)) == 2 and first[0] not in _children(supervisor.pid),
            seconds=30,
            what="the dead worker started again",
        )
        assert first[1] in _children(supervisor.pid)  # the other went on
        workers = _children(supervisor.pid)
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=30) == 0
        output = supervisor.stdout.read() if supervisor.stdout else ""
        assert re.search(r"worker \d ended \(exit status -9\); starting it again", output), output
        for pid in workers:  # reaped: no process left behind
            assert (
                not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
            )
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
    # Starting the workers queued the daily upkeep once.
    assert DBTaskResult.objects.filter(task_path="assay.upkeep.upkeep_daily").count() >= 1


def test_a_supervisor_killed_outright_leaves_no_worker_behind(env):
    supervisor = subprocess.Popen(
        [sys.executable, "manage.py", "task_workers", "--processes", "1", "--grace", "1"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        _until(lambda: len(_children(supervisor.pid)) == 1, seconds=30, what="a worker")
        (worker,) = _children(supervisor.pid)
        supervisor.kill()
        supervisor.wait()
        _until(
            lambda: (
                not Path(f"/proc/{worker}").exists()
                or "Z" in Path(f"/proc/{worker}/stat").read_text().split()[2]
            ),
            seconds=30,
            what="the orphaned worker gone",
        )
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()


def test_a_job_whose_worker_is_killed_under_the_supervisor_shows_interrupted_at_once(
    client, twelve_units, env, fake_openai
):
    # JOB_STALE_AFTER_S keeps its default (120 s): only the supervisor's word can show the job interrupted.
    client.force_login(OrganiserFactory())
    job = _start(client)
    supervisor = subprocess.Popen(
        [sys.executable, "manage.py", "task_workers", "--processes", "1", "--grace", "1"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        _until(lambda: len(fake_openai.answered) >= 3, what="the worker's first answers")
        (worker,) = _children(supervisor.pid)
        os.kill(worker, signal.SIGKILL)
        _until(
            lambda: DBTaskResult.objects.get(id=job.task_id).status == "FAILED",
            seconds=30,
            what="the dead worker's task marked failed",
        )
        page = client.get(reverse("judging:job-list"))
        row = re.search(rf'<tr data-job="{job.pk}".*?</tr>', page.content.decode(), re.S)
        assert row is not None
        assert '<span data-field="status">interrupted</span>' in row.group(0)
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=30) == 0
        output = supervisor.stdout.read() if supervisor.stdout else ""
        assert "its 1 running task(s) marked failed" in output, output
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
    job.refresh_from_db()
    assert job.status == "running"  # the row itself never got to say otherwise; the page reads both
