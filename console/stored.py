"""The console's figures that read many rows, as stored reports (judging/reports): what each reads, its
code version, and the function a task worker runs to compute it. The page asks
`judging.reports.store.report_for` with these and draws from the JSON returned.

- A pool's page: its figures read every entry of the pool and, for an adaptive pool, every ranking of the
  collection and the filter judge's grades. The choice is the pool; the revisions of the tables it reads
  make a rebuilt pool, a new run or (adaptive) a new grade compute it again, so the saving and the pairs
  left out are never shown for runs or grades as they were.
- The dashboard's pace of each assessor: it reads every judgment the assessors gave (sittings, median).
  A grade written after makes the next view compute it again, the earlier pace shown meanwhile, labelled
  with its time; the units done, held and left stay counted at each view.
"""

from __future__ import annotations

import dataclasses
from dataclasses import astuple
from typing import Any

from django.db import models

from annotation.models import (
    Collection,
    Judge,
    Pool,
    PoolEntry,
    PtkbJudgment,
    Ranking,
    RelevanceJudgment,
    Run,
    Turn,
)
from annotation.relevance.pooling import PoolSummary, PoolTurn
from console.selectors import PaceLine, assessor_pace, pool_summary

# Raise the version whenever the figures or their shape change: rows of an older version are then never
# found again.
POOL_SUMMARY = ("pool-summary", 1)


def pool_reads(pool: Pool) -> tuple[type[models.Model], ...]:
    """The tables a pool's figures read: its entries and turns, and for an adaptive pool the rankings
    and grades the saving is counted against."""
    reads: tuple[type[models.Model], ...] = (Pool, PoolEntry, Turn)
    return reads + (Ranking, Run, RelevanceJudgment) if pool.adaptive else reads


def _noop(done: int, total: int, word: str = "") -> None:
    """The progress of a computation made in the request: nobody follows it."""


def pool_summary_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """{"error", "turns": [[turn id, pooled, from head, from filter, unfiltered, candidates, saved]...]}
    of the pool `params["pool"]` (pk), its turns in reading order."""
    pool = Pool.objects.filter(pk=params["pool"], collection=collection).first()
    if pool is None:
        return {"error": "the pool was deleted", "turns": []}
    summary = pool_summary(pool=pool)
    progress(1, 1, "pools")
    return {"error": None, "turns": [list(astuple(turn)) for turn in summary.turns]}


def pool_summary_shown(pool: Pool, result: dict[str, Any]) -> PoolSummary:
    """The summary a stored result holds, of `pool` as it is now read."""
    return PoolSummary(pool=pool, turns=[PoolTurn(*row) for row in result["turns"]])


PACE = ("assessor-pace", 1)
PACE_READS: tuple[type[models.Model], ...] = (RelevanceJudgment, PtkbJudgment, Judge, Turn)


def pace_compute(*, collection: Collection, params: dict[str, Any], progress: Any = _noop) -> dict[str, Any]:
    """{"assessors": [PaceLine as a dict]} of the collection, the last hour counted back from now."""
    lines = assessor_pace(collection=collection)
    progress(1, 1, "assessors")
    return {"assessors": [dataclasses.asdict(line) for line in lines]}


def pace_shown(result: dict[str, Any]) -> list[PaceLine]:
    return [PaceLine(**line) for line in result["assessors"]]
