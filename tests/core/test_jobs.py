"""Every background job keeps the same bookkeeping (core.jobs): the same four states, each job keeping the
words its pages show for them, and the same moves from waiting to running to done or failed."""

from __future__ import annotations

import pytest
from django.db import models
from django_tasks.base import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from console.models import ImportJob
from core.jobs import JobStatus, job_end, job_queue, job_start, job_task_gone, status_field
from crowd.models import CrowdFitJob
from judging.hybrid.tasks import budget_simulation_run_task
from judging.models import BudgetSimulation, JudgeJob
from tests.factories import CollectionFactory


def _simulation(**fields: object) -> BudgetSimulation:
    return BudgetSimulation.objects.create(
        collection=CollectionFactory(), params={}, params_key="k", fingerprint="f", **fields
    )


def test_every_job_keeps_the_words_its_pages_show_for_the_shared_states():
    assert ImportJob(status=JobStatus.RUNNING).get_status_display() == "Importing"
    assert ImportJob(status=JobStatus.FAILED).get_status_display() == "Rejected"
    assert JudgeJob(status=JobStatus.PENDING).get_status_display() == "Pending"
    assert BudgetSimulation(status=JobStatus.PENDING).get_status_display() == "Waiting for a worker"
    assert CrowdFitJob(status=JobStatus.FAILED).get_status_display() == "Failed"
    for job in (ImportJob, JudgeJob, BudgetSimulation, CrowdFitJob):
        assert sorted(job.Status.values) == sorted(JobStatus.values)


def test_it_refuses_words_for_states_that_are_not_the_jobs_states():
    class Other(models.TextChoices):
        PENDING = "pending", "Waiting"
        QUEUED = "queued", "Queued"

    with pytest.raises(TypeError, match="must have the values pending, running, done, failed"):
        status_field(Other)


def test_it_refuses_to_end_a_job_in_a_state_that_is_not_an_end():
    with pytest.raises(ValueError, match="failed, not running$"):
        job_end(job=BudgetSimulation(pk=1), status=JobStatus.RUNNING)


def test_it_tells_a_job_whose_task_is_gone_from_one_that_waits_or_has_no_task():
    waiting = BudgetSimulation(status=JobStatus.PENDING, task_id="t1")

    assert job_task_gone(waiting, unfinished_tasks=set())
    assert not job_task_gone(waiting, unfinished_tasks={"t1"})
    assert not job_task_gone(waiting, unfinished_tasks=None)  # the backend cannot tell
    assert not job_task_gone(BudgetSimulation(status=JobStatus.PENDING), unfinished_tasks=set())
    assert not job_task_gone(BudgetSimulation(status=JobStatus.DONE, task_id="t1"), unfinished_tasks=set())


@pytest.mark.django_db
def test_it_records_when_a_job_started_and_ended_with_its_outcome():
    simulation = _simulation()

    job_start(job=simulation)
    job_end(job=simulation, status=JobStatus.FAILED, message="no units")

    simulation.refresh_from_db()
    assert simulation.status == JobStatus.FAILED and simulation.message == "no units"
    assert simulation.started_at is not None and simulation.finished_at is not None
    assert simulation.finished_at >= simulation.started_at and simulation.finished


@pytest.mark.django_db
def test_queueing_a_job_again_replaces_its_task_and_marks_the_old_one_failed():
    simulation = _simulation(status=JobStatus.FAILED, message="worker died")
    job_queue(job=simulation, task=budget_simulation_run_task)
    first = BudgetSimulation.objects.get(pk=simulation.pk).task_id

    job_queue(job=BudgetSimulation(pk=simulation.pk), task=budget_simulation_run_task, message="")

    simulation.refresh_from_db()
    assert simulation.status == JobStatus.PENDING and simulation.message == ""
    assert simulation.task_id and simulation.task_id != first
    assert DBTaskResult.objects.get(id=first).status == TaskResultStatus.FAILED
    assert DBTaskResult.objects.get(id=simulation.task_id).status == TaskResultStatus.READY
