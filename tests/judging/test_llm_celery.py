"""A judge job through a real Celery worker and Redis (make test starts Redis and sets REDIS_TEST_URL)."""

from __future__ import annotations

import os

import pytest
from celery.contrib.testing.worker import start_worker

from annotation.models import RelevanceJudgment
from assay.celery import app
from judging.jobs import judge_job_start
from judging.models import JudgeJob
from judging.tasks import judge_job_run_task
from tests.factories import CollectionFactory, PassageFactory, RankingFactory, TurnFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_celery():
    url = os.environ.get("REDIS_TEST_URL")
    if not url:
        pytest.skip("REDIS_TEST_URL is not set (make test starts Redis and sets it)")
    saved = {
        k: app.conf[k] for k in ("broker_url", "result_backend", "task_always_eager", "task_default_queue")
    }
    # A queue of this test's own, so parallel runs sharing the Redis server take no one else's messages.
    queue = f"assay-test-{os.getpid()}"
    app.conf.update(broker_url=url, result_backend=url, task_always_eager=False, task_default_queue=queue)
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", queues=[queue]):
            yield app
    finally:
        app.conf.update(saved)


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
    result = judge_job_run_task.delay(job.pk)
    assert result.get(timeout=60) == {"job": job.pk, "status": "done", "calls_made": 2, "cache_hits": 0}
    job.refresh_from_db()
    assert (job.status, job.units_done) == ("done", 2)
    assert RelevanceJudgment.objects.filter(judge__name="celery-judge", grade=1).count() == 2
    assert len(fake_openai.received) == 2
    assert JudgeJob.objects.count() == 1
