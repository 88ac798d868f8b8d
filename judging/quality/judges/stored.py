"""The judges page's figures as a stored report (judging/reports): what it reads, its code version, and
the function a task worker runs to compute it. The page asks `judging.reports.store.report_for` with these
and reads a page of the judges from the stored JSON in SQL (`judges_page_read`), then those judges alone
(one query); its JSON download gives every judge.

The choice is the reference judge, by primary key (or None).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import models
from django.http import HttpRequest
from django.utils.dateparse import parse_datetime

from annotation.models import Collection, Judge
from annotation.selectors import collection_tables
from core.pagination import Pager, page_of, positions_of
from crowd.models import CrowdCampaign
from judging.models import JudgeJob
from judging.quality.judges.selectors import (
    LABEL_TASKS,
    Agreement,
    JudgeRow,
    MachineJobs,
    PoolCoverage,
    collection_judges,
    collection_pools,
)
from judging.reports.models import ReportResult
from judging.reports.store import report_parts

# Raise the version whenever the figures or their shape change: rows of an older version are then never
# found again.
JUDGES = ("quality-judges", 2)
JUDGES_PER_PAGE = 20


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
    judge with labels in the collection, by name, against the reference judge `params["reference"]`; beside
    them what the page's columns need of every judge, so that a page of judges draws them alone: "tasks",
    the label tasks some judge labelled (keys of LABEL_TASKS, in its order), and "pools" ({pool, depth,
    size}, by name)."""
    rows = collection_judges(collection=collection, reference_id=params["reference"])
    pools = collection_pools(collection=collection)
    progress(1, 1, "judges")
    return {
        "tasks": [task.key for task in LABEL_TASKS if any(row.labels.get(task.key) for row in rows)],
        "pools": [{"pool": pool.name, "depth": pool.depth, "size": pool.size} for pool in pools],
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
        ],
    }


@dataclass(frozen=True)
class JudgesPage:
    """What the judges page draws of a stored result: a page of its judges, how many there are in all,
    the label tasks and the pools of its columns."""

    rows: list[JudgeRow]
    pager: Pager
    tasks: list[str]
    pools: list[dict[str, Any]]


def judges_page_read(*, request: HttpRequest, report: ReportResult) -> JudgesPage:
    """The page of the stored result's judges that the request's `page` names, read in SQL (two queries
    and the page's judges: the same whatever the number of judges)."""
    head = report_parts(
        report=report, parts={"total": "$.judges.size()", "tasks": "$.tasks[*]", "pools": "$.pools[*]"}
    )
    pager = page_of(
        request,
        range(next(iter(head["total"]), 0)),
        param="page",
        anchor="judges-table",
        per_page=JUDGES_PER_PAGE,
    )
    part = report_parts(report=report, parts={"judges": ("$.judges", positions_of(pager))})
    return JudgesPage(rows=judge_rows(part), pager=pager, tasks=head["tasks"], pools=head["pools"])


def judge_rows(result: dict[str, Any]) -> list[JudgeRow]:
    """The rows of a stored result's judges (all of a result, or the page `judges_page_read` read): its
    judges read again (one query), in the result's order; a judge deleted since is left out."""
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
