"""A pool's page as a stored report (judging/reports): what it reads, its code version, and the function a
task worker runs to compute it. The pool page asks `judging.reports.store.report_for` with these and
draws a page of turns from the JSON returned.

Its figures read every entry of the pool and, for an adaptive pool, every ranking of the collection and
the filter judge's grades: at a track's size that is too much for a request. The choice is the pool; the
revisions of the tables it reads make a rebuilt pool, a new run or (adaptive) a new grade compute it
again, so the saving and the pairs left out are never shown for runs or grades as they were.
"""

from __future__ import annotations

from dataclasses import astuple
from typing import Any

from django.db import models

from annotation.models import Collection, Pool, PoolEntry, Ranking, RelevanceJudgment, Run, Turn
from annotation.relevance.pooling import PoolSummary, PoolTurn
from console.selectors import pool_summary

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
