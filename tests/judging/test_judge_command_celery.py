"""An NLI judge job through a real Celery worker and Redis (make test starts Redis and sets REDIS_TEST_URL)."""

from __future__ import annotations

import pytest

from annotation.models import Judge, NtnJudgment
from judging.machine.jobs import judge_job_start
from judging.models import JudgeJob
from tests.factories import CollectionFactory, JudgeFactory, NuggetFactory, TopicFactory, TurnFactory
from tests.judging.nli_model import build_tiny_nli_model
from tests.judging.test_llm_celery import redis_celery  # noqa: F401  (the worker fixture, shared)

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_ntn_job_runs_on_a_celery_worker_through_redis(redis_celery, tmp_path):  # noqa: F811
    collection = CollectionFactory()
    topic = TopicFactory(collection=collection)
    first, second = TurnFactory(topic=topic), TurnFactory(topic=topic)
    gold, extractor = JudgeFactory(name="gold"), JudgeFactory(name="extractor", kind=Judge.Kind.LLM)
    NuggetFactory(judge=gold, turn=first, text="Paris is the capital of France.")
    NuggetFactory(judge=gold, turn=second, text="A marathon is 42.195 kilometres long.")
    NuggetFactory(judge=extractor, turn=first, text="The capital of France is Paris.")
    NuggetFactory(judge=extractor, turn=first, text="The museum opens at nine.")
    NuggetFactory(judge=extractor, turn=second, text="Marathons are long.")
    job = judge_job_start(
        collection=collection,
        task="ntn",
        judge_name="nli:celery",
        model=str(build_tiny_nli_model(tmp_path / "tiny")),
        options={"gold_judge": "gold", "response_nugget_judge": "extractor", "threshold": 0.5},
        concurrency=1,
    )

    result = redis_celery.tasks["judging.judge_job_run"].apply_async(args=[job.pk])

    assert result.get(timeout=120) == {"job": job.pk, "status": "done", "calls_made": 3, "cache_hits": 0}
    job.refresh_from_db()
    assert (job.status, job.units_done, job.units_total) == ("done", 2, 2)
    assert NtnJudgment.objects.filter(judge__name="nli:celery").count() == 3
    assert JudgeJob.objects.count() == 1
