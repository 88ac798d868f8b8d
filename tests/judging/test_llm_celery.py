"""A judge job through a real Celery worker and Redis (make test starts Redis and sets REDIS_TEST_URL)."""

from __future__ import annotations

import os

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker

import judging.tasks  # noqa: F401  (registers the shared task on every app, the test's too)
from annotation.models import RelevanceJudgment
from judging.machine.jobs import judge_job_start
from judging.models import JudgeJob
from tests.factories import CollectionFactory, PassageFactory, RankingFactory, TurnFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_celery():
    """A Celery app of its own on Redis with a worker thread: assay's app keeps the eager settings and
    whatever connections earlier tests made, and a queue of its own keeps parallel runs apart."""
    url = os.environ.get("REDIS_TEST_URL")
    if not url:
        pytest.skip("REDIS_TEST_URL is not set (make test starts Redis and sets it)")
    queue = f"assay-test-{os.getpid()}"
    app = Celery("assay-test", broker=url, backend=url, set_as_current=False)
    app.conf.update(task_default_queue=queue, task_always_eager=False, task_acks_late=True)
    with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", queues=[queue]):
        yield app


def test_a_job_runs_on_a_celery_worker_through_redis(fake_openai, redis_celery):
    fake_openai.responder = lambda prompt: "Grade: 1"
    collection = CollectionFactory()
    turn = TurnFactory(topic__collection=collection)
    PassageFactory(collection=collection, passage_id="p:1", text="Some text.")
    PassageFactory(collection=collection, passage_id="p:2", text="Other text.")
    RankingFactory(run__collection=collection, turn=turn, passage_ids=["p:1", "p:2"])
    job = judge_job_start(
        collection=collection,
        task="relevance",
        judge_name="celery-judge",
        model="gpt-4o-mini",
        options={},
        concurrency=2,
    )
    result = redis_celery.tasks["judging.judge_job_run"].apply_async(args=[job.pk])
    assert result.get(timeout=60) == {"job": job.pk, "status": "done", "calls_made": 2, "cache_hits": 0}
    job.refresh_from_db()
    assert (job.status, job.units_done) == ("done", 2)
    assert RelevanceJudgment.objects.filter(judge__name="celery-judge", grade=1).count() == 2
    assert len(fake_openai.received) == 2
    assert JudgeJob.objects.count() == 1
