"""Every background job keeps the same bookkeeping (core.jobs): the same four states, each job keeping the
words its pages show for them."""

from __future__ import annotations

import pytest
from django.db import models

from annotation.models import ImportJob
from core.jobs import JobStatus, status_field
from crowd.models import CrowdFitJob
from judging.models import BudgetSimulation, JudgeJob


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
