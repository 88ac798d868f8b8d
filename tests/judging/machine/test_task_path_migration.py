"""A judge job queued while its task lived at judging.tasks still runs: the migration that followed the
task to judging.machine.tasks moves the stored path, and a worker finds the task by it."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django_tasks_db.models import DBTaskResult

from judging.machine.tasks import judge_job_run_task
from judging.models import JudgeJob
from tests.factories import CollectionFactory, JudgeFactory

pytestmark = pytest.mark.django_db(transaction=True)

MIGRATION = importlib.import_module("judging.migrations.0010_judge_job_task_path")


def test_a_task_queued_under_the_old_path_resolves_to_the_task_after_the_migration():
    collection = CollectionFactory()
    job = JudgeJob.objects.create(
        collection=collection, judge=JudgeFactory(), task=JudgeJob.Task.RELEVANCE, model="m"
    )
    result = judge_job_run_task.enqueue(job.pk)
    DBTaskResult.objects.filter(id=result.id).update(task_path=MIGRATION.OLD)

    MIGRATION.forward(apps, None)

    row = DBTaskResult.objects.get(id=result.id)
    assert row.task_path == MIGRATION.NEW == judge_job_run_task.module_path
    assert row.task.func is judge_job_run_task.func


def test_it_moves_the_rows_back_when_reversed():
    result = judge_job_run_task.enqueue(0)
    MIGRATION.backward(apps, None)
    assert DBTaskResult.objects.get(id=result.id).task_path == MIGRATION.OLD
