"""The daily upkeep runs as a task that queues its next run: no scheduler beside the task workers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from assay.upkeep import upkeep_daily, upkeep_schedule
from tests.background import tasks_run_ready

pytestmark = pytest.mark.django_db


def test_it_clears_expired_sessions_and_old_finished_tasks_and_queues_its_next_run_a_day_later():
    now = timezone.now()
    old, recent = (
        upkeep_daily.enqueue().id,  # any finished task would do: the upkeep's own
        upkeep_daily.enqueue().id,
    )
    DBTaskResult.objects.filter(id=old).update(status="SUCCESSFUL", finished_at=now - timedelta(days=15))
    DBTaskResult.objects.filter(id=recent).update(status="SUCCESSFUL", finished_at=now - timedelta(days=13))
    Session.objects.create(session_key="old", session_data="x", expire_date=now - timedelta(days=1))
    Session.objects.create(session_key="live", session_data="x", expire_date=now + timedelta(days=1))
    upkeep_schedule()
    upkeep_schedule()  # workers started again: still one run waiting
    assert DBTaskResult.objects.filter(status="READY").count() == 1

    assert tasks_run_ready() == 1

    assert list(Session.objects.values_list("session_key", flat=True)) == ["live"]
    assert not DBTaskResult.objects.filter(id=old).exists()
    assert DBTaskResult.objects.filter(id=recent).exists()
    (following,) = DBTaskResult.objects.filter(status="READY")
    assert following.task_path == "assay.upkeep.upkeep_daily"
    assert timedelta(hours=23) < following.run_after - now < timedelta(hours=25)
    assert tasks_run_ready() == 0  # not due before then
