"""Reads for the organiser's console: pool sizes and savings, who does what in a campaign, judges by task."""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from annotation.console.uploads import progress_cache_key
from annotation.models import (
    Assignment,
    Collection,
    ImportJob,
    Judge,
    Pool,
    PoolEntry,
    PtkbJudgment,
    Ranking,
    RelevanceJudgment,
    TopicWork,
    WorkSlot,
)
from annotation.relevance.pooling import PoolSummary, PoolTurn
from annotation.selectors import natural_key
from core.jobs import job_interrupted
from core.registry import COLLECTION_LINKS, HOME_SECTIONS, JobLine, Link, job_lines

# Two judgments further apart than this belong to two sittings; the pause is not working time.
SITTING_GAP = timedelta(minutes=30)
# A held unit whose lease ends sooner than this is listed as expiring.
EXPIRING_WITHIN = timedelta(minutes=15)


# --- Uploads -------------------------------------------------------------------------------------------

# What a running import's `done of total` counts, as its page says it: each importer counts the records
# of its file once, as they are stored (a qrels file's grades go in with one upsert: none, then all).
PROGRESS_UNITS: dict[str, str] = {
    ImportJob.Kind.TOPICS: "topics stored",
    ImportJob.Kind.PASSAGES: "passages stored",
    ImportJob.Kind.RUN: "rankings and responses stored",
    ImportJob.Kind.QRELS: "grades stored",
    ImportJob.Kind.NUGGETS: "nuggets stored",
    ImportJob.Kind.SUPPORT_LABELS: "labels stored",
}


def progress_unit(*, job: ImportJob) -> str:
    return PROGRESS_UNITS.get(job.kind, "records stored")


INTERRUPTED_REASON = "its worker stopped during the import; nothing was imported"


@dataclass(frozen=True)
class ImportJobState:
    """What the import page and its status endpoint say about a job."""

    status: str
    label: str
    percent: int
    done: int
    total: int
    finished: bool
    reason: str = ""

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted"


def import_job_state(*, job: ImportJob) -> ImportJobState:
    """A job's status and progress, from its row and the latest value its runner published.

    A running import may publish only to the cache (an import run inside its caller's transaction cannot
    write its row from a second connection), so the fresher of the two is shown. A running job silent for longer than IMPORT_STALE_AFTER_S,
    or an unfinished one whose task has ended or is gone, lost its worker: its transaction never
    committed, so nothing was imported.
    """
    done, total, percent = job.done, job.total, job.percent
    interrupted = ImportJobState("interrupted", "Interrupted", percent, done, total, True, INTERRUPTED_REASON)
    if job_interrupted(job):
        return interrupted
    if job.status != ImportJob.Status.RUNNING:
        return ImportJobState(job.status, job.get_status_display(), percent, done, total, job.finished)
    beats = [at for at in (job.heartbeat_at, job.started_at) if at is not None]
    published = cache.get(progress_cache_key(job.pk))
    if published:
        at = datetime.fromtimestamp(published["at"], tz=UTC)
        if not beats or at > max(beats):
            done, total, percent = published["done"], published["total"], published["percent"]
        beats.append(at)
    stale_after = timedelta(seconds=settings.IMPORT_STALE_AFTER_S)
    if beats and timezone.now() - max(beats) > stale_after:
        return dataclasses.replace(interrupted, percent=percent, done=done, total=total)
    return ImportJobState(job.status, job.get_status_display(), percent, done, total, False)


# --- Judges by task ----------------------------------------------------------------------------------


def relevance_judges(*, collection: Collection) -> QuerySet[Judge]:
    """Judges with relevance grades on the collection: the candidates for an adaptive pool's filter."""
    return (
        Judge.objects.filter(relevancejudgments__turn__collection=collection)
        .annotate(n=Count("relevancejudgments"))
        .order_by("name")
    )


def ptkb_judges(*, collection: Collection) -> QuerySet[Judge]:
    return Judge.objects.filter(ptkbjudgments__turn__collection=collection).distinct().order_by("name")


def nugget_judges(*, collection: Collection) -> QuerySet[Judge]:
    return Judge.objects.filter(nuggets__turn__collection=collection).distinct().order_by("name")


def gold_response_judges(*, collection: Collection) -> QuerySet[Judge]:
    return Judge.objects.filter(goldresponses__turn__collection=collection).distinct().order_by("name")


def support_judges(*, collection: Collection) -> QuerySet[Judge]:
    return (
        Judge.objects.filter(supportjudgments__sentence__response__run__collection=collection)
        .distinct()
        .order_by("name")
    )


def assessors() -> QuerySet[Any]:
    """Active accounts that may be given work, organisers included (they often judge too)."""
    return get_user_model().objects.filter(is_active=True).order_by("username")


# --- Pools -------------------------------------------------------------------------------------------


def pool_summary(*, pool: Pool) -> PoolSummary:
    """A pool's size per turn, what came from the runs' heads, from the filter and unfiltered, and what
    the filter saved: the passages the runs rank within the pool's depth below the always-pooled head
    that the filter judge graded below the minimum. Only grades save: a pair the filter never graded is
    no saving, in the pool (`unfiltered`) or, for a pool built before that rule, out of it (`left_out`).

    Three queries whatever the pool's size: the entries grouped by turn, the rankings, and the filter's
    grades below the minimum. The saving is counted against the runs as they are now, as `build_pool`
    counts it when it builds.
    """
    per_turn: dict[int, PoolTurn] = {}
    # Deeper than the head and without a filter grade: let in because the filter judge had no say.
    unfiltered = Q(
        best_rank__gt=pool.depth if pool.always_depth is None else pool.always_depth,
        filter_grade__isnull=True,
    )
    rows = (
        PoolEntry.objects.filter(pool=pool)
        .values("turn_id", "turn__turn_id")
        .annotate(
            n=Count("id"),
            via=Count("id", filter=Q(via_filter=True)),
            unfiltered=Count("id", filter=unfiltered),
        )
    )
    for row in rows:
        per_turn[row["turn_id"]] = PoolTurn(
            turn_id=row["turn__turn_id"],
            pooled=row["n"],
            from_head=row["n"] - row["via"] - row["unfiltered"],
            from_filter=row["via"],
            unfiltered=row["unfiltered"],
        )
    if pool.adaptive and pool.filter_judge_id is not None:
        head = pool.always_depth or 0
        within: dict[int, set[str]] = defaultdict(set)
        heads: dict[int, set[str]] = defaultdict(set)
        rankings = Ranking.objects.filter(turn_id__in=list(per_turn), run__collection=pool.collection)
        for turn_pk, passage_ids in rankings.values_list("turn_id", "passage_ids").iterator(chunk_size=200):
            within[turn_pk].update(passage_ids[: pool.depth])
            heads[turn_pk].update(passage_ids[:head])
        graded_below: dict[int, set[str]] = defaultdict(set)
        grades = RelevanceJudgment.objects.filter(
            judge_id=pool.filter_judge_id, turn_id__in=list(per_turn), grade__lt=pool.min_grade
        )
        for turn_pk, passage_id in grades.values_list("turn_id", "passage_id").iterator(chunk_size=5000):
            graded_below[turn_pk].add(passage_id)
        for turn_pk, line in per_turn.items():
            line.candidates = len(within[turn_pk])
            line.saved = len((within[turn_pk] - heads[turn_pk]) & graded_below[turn_pk])
    else:
        for line in per_turn.values():
            line.candidates = line.pooled
    turns = sorted(per_turn.values(), key=lambda t: natural_key(t.turn_id))
    return PoolSummary(pool=pool, turns=turns)


def pools_listed(*, collection: Collection) -> QuerySet[Pool]:
    """The collection's pools with their pairs, their turns and, for adaptive pools, the turns holding
    pairs that entered unfiltered (deeper than the head, no grade of the filter judge): one query."""
    unfiltered = Q(
        adaptive=True, entries__filter_grade__isnull=True, entries__best_rank__gt=F("always_depth")
    )
    return (
        Pool.objects.filter(collection=collection)
        .select_related("filter_judge")
        .annotate(
            size=Count("entries"),
            n_turns=Count("entries__turn", distinct=True),
            unfiltered_turns=Count("entries__turn", distinct=True, filter=unfiltered),
        )
    )


# --- The campaign dashboard ------------------------------------------------------------------------


@dataclass
class AssessorLine:
    username: str
    done: int = 0
    held: int = 0
    left: int = 0
    judgments: int = 0
    per_hour: float | None = None
    median_seconds: float | None = None
    last_hour: int = 0


@dataclass
class ExpiringLease:
    username: str
    assignment: str
    unit: str
    leased_until: datetime


@dataclass
class Dashboard:
    collection: Collection
    assessors: list[AssessorLine]
    expiring: list[ExpiringLease]
    assignments: list[Assignment]
    support_assignments: int
    import_jobs: list[ImportJob]
    # The jobs of the apps built on this one (judging's judge jobs), as they registered them.
    job_lines: list[JobLine]
    links: list[Link]


def campaign_dashboard(*, collection: Collection, now: datetime | None = None) -> Dashboard:
    """Per assessor: relevance units done, held under a live lease, and left for them to take; their
    pace (judgments per working hour, sittings split at pauses over 30 minutes, and median seconds per
    judgment as the pages timed it); leases about to run out; the collection's import and judge jobs."""
    now = now or timezone.now()
    assignments = list(Assignment.objects.filter(pool__collection=collection).select_related("pool"))
    lines: dict[int, AssessorLine] = {}

    def line_of(user_pk: int, username: str) -> AssessorLine:
        return lines.setdefault(user_pk, AssessorLine(username=username))

    for assignment in assignments:
        for user in assignment.assessors.all():
            line_of(user.pk, user.get_username())
    slots = (
        WorkSlot.objects.filter(assignment__in=assignments)
        .select_related("assessor", "unit", "assignment")
        .order_by("unit_id", "copy")
    )
    by_unit: dict[int, list[WorkSlot]] = defaultdict(list)
    expiring: list[ExpiringLease] = []
    for slot in slots:
        by_unit[slot.unit_id].append(slot)
        if slot.assessor is None:
            continue
        line = line_of(slot.assessor.pk, slot.assessor.get_username())
        if slot.completed_at is not None:
            line.done += 1
        elif slot.leased_until is not None and slot.leased_until >= now:
            line.held += 1
            if slot.leased_until - now <= EXPIRING_WITHIN:
                expiring.append(
                    ExpiringLease(line.username, slot.assignment.name, slot.unit.label, slot.leased_until)
                )
    members = {a.pk: {u.pk for u in a.assessors.all()} for a in assignments}
    for unit_slots in by_unit.values():
        takers = {s.assessor_id for s in unit_slots if s.assessor_id is not None}
        takeable = any(
            s.completed_at is None and (s.assessor_id is None or (s.leased_until or now) < now)
            for s in unit_slots
        )
        if not takeable:
            continue
        for user_pk in members[unit_slots[0].assignment_id] - takers:
            lines[user_pk].left += 1

    _pace(collection, lines, now)
    import_jobs = list(ImportJob.objects.filter(collection=collection)[:20])
    return Dashboard(
        collection=collection,
        assessors=sorted(lines.values(), key=lambda line: line.username),
        expiring=sorted(expiring, key=lambda lease: lease.leased_until),
        assignments=assignments,
        support_assignments=TopicWork.objects.filter(
            kind=TopicWork.Kind.SUPPORT, topic__collection=collection
        ).count(),
        import_jobs=import_jobs,
        job_lines=job_lines(collection_id=collection.pk, limit=20),
        links=[link(collection.name) for link in COLLECTION_LINKS],
    )


def _pace(collection: Collection, lines: dict[int, AssessorLine], now: datetime) -> None:
    times: dict[int, list[datetime]] = defaultdict(list)
    spent: dict[int, list[int]] = defaultdict(list)
    names: dict[int, str] = {}
    for model in (RelevanceJudgment, PtkbJudgment):
        rows = model.objects.filter(
            turn__collection=collection, judge__kind=Judge.Kind.ASSESSOR, judge__user__isnull=False
        ).values_list("judge__user_id", "judge__user__username", "created_at", "time_spent_ms")
        for user_pk, username, created_at, time_spent_ms in rows.iterator(chunk_size=5000):
            names[user_pk] = username
            times[user_pk].append(created_at)
            if time_spent_ms is not None:
                spent[user_pk].append(time_spent_ms)
    for user_pk, stamps in times.items():
        line = lines.setdefault(user_pk, AssessorLine(username=names[user_pk]))
        stamps.sort()
        line.judgments = len(stamps)
        line.last_hour = sum(1 for t in stamps if t >= now - timedelta(hours=1))
        working = sum(
            (later - earlier for earlier, later in pairwise(stamps) if later - earlier <= SITTING_GAP),
            timedelta(),
        )
        if working > timedelta():
            line.per_hour = round(len(stamps) / (working / timedelta(hours=1)), 1)
        if spent[user_pk]:
            line.median_seconds = round(statistics.median(spent[user_pk]) / 1000, 1)


# --- The organiser's home --------------------------------------------------------------------------


def organiser_home(*, user: Any) -> dict[str, Any]:
    """What an organiser's home lists besides the collections: what the apps built on this one show there
    (crowd campaigns), and recent jobs (judging's, registered in core.registry, and uploads)."""
    return {
        "sections": [section() for section in HOME_SECTIONS],
        "job_lines": job_lines(collection_id=None, limit=10),
        "import_jobs": list(ImportJob.objects.select_related("collection")[:10]),
    }
