"""The judges page's figures as a stored report (judging/reports): what it reads, its code version, and
the function a task worker runs to compute it. The page asks `judging.reports.store.report_for` with these
and builds its rows from the JSON returned, reading only the judges named there (one query).

The choice is the reference judge, by primary key (or None).
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any

from django.db import models
from django.utils.dateparse import parse_datetime

from annotation.models import Collection, Judge
from annotation.selectors import collection_tables
from crowd.models import CrowdCampaign
from judging.models import JudgeJob
from judging.quality.judges.selectors import Agreement, JudgeRow, MachineJobs, PoolCoverage, collection_judges

# Raise the version whenever the figures or their shape change: rows of an older version are then never
# found again.
JUDGES = ("quality-judges", 1)


@functools.cache
def judges_reads() -> tuple[type[models.Model], ...]:
    """Every table of the collection and its labels (but the assessors' leases and pauses), the machine
    jobs and the crowd campaigns."""
    return (*collection_tables(), JudgeJob, CrowdCampaign)


def _noop(done: int, total: int, word: str = "") -> None:
    """The progress of a computation made in the request: nobody follows it."""


def judges_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """{"judges": [{id, labels, first_label, last_label, jobs, campaigns, coverage, agreement}]} of every
    judge with labels in the collection, by name, against the reference judge `params["reference"]`."""
    rows = collection_judges(collection=collection, reference_id=params["reference"])
    progress(1, 1, "judges")
    return {
        "judges": [
            {
                "id": row.judge.pk,
                "labels": row.labels,
                # isoformat keeps the microseconds JSON's encoder would cut.
                "first_label": row.first_label.isoformat() if row.first_label else None,
                "last_label": row.last_label.isoformat() if row.last_label else None,
                "jobs": None
                if row.jobs is None
                else {**row.jobs.__dict__, "cost_usd": str(row.jobs.cost_usd)},
                "campaigns": row.campaigns,
                "coverage": [c.__dict__ for c in row.coverage],
                "agreement": None if row.agreement is None else row.agreement.__dict__,
            }
            for row in rows
        ]
    }


def judge_rows(result: dict[str, Any]) -> list[JudgeRow]:
    """The page's rows from a stored result: its judges read again (one query), in the result's order;
    a judge deleted since is left out."""
    judges = Judge.objects.select_related("user").in_bulk([row["id"] for row in result["judges"]])
    return [
        JudgeRow(
            judge=judges[row["id"]],
            labels=row["labels"],
            first_label=parse_datetime(row["first_label"]) if row["first_label"] else None,
            last_label=parse_datetime(row["last_label"]) if row["last_label"] else None,
            jobs=None
            if row["jobs"] is None
            else MachineJobs(**{**row["jobs"], "cost_usd": Decimal(row["jobs"]["cost_usd"])}),
            campaigns=row["campaigns"],
            coverage=[PoolCoverage(**c) for c in row["coverage"]],
            agreement=None if row["agreement"] is None else Agreement(**row["agreement"]),
        )
        for row in result["judges"]
        if row["id"] in judges
    ]
