"""Reads for the organiser's console: pool sizes and savings, who does what in a campaign, judges by task,
and what the home page and a collection's dashboard list of judging and crowd (judge jobs, campaigns)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from annotation.judge_menus import judges_with_label_counts, judges_with_labels
from annotation.labels.family import FileKind
from annotation.models import (
    Assignment,
    Collection,
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
from console.models import ImportJob
from core.ordering import natural_key
from crowd.campaigns.selectors import campaigns_recent
from judging.machine.selectors import judge_jobs_recent

# Two judgments further apart than this belong to two sittings; the pause is not working time.
SITTING_GAP = timedelta(minutes=30)
# A held unit whose lease ends sooner than this is listed as expiring.
EXPIRING_WITHIN = timedelta(minutes=15)


# --- Judges by task ----------------------------------------------------------------------------------


def relevance_judges(*, collection: Collection) -> QuerySet[Judge]:
    """Judges with relevance grades on the collection, each with how many (`labels`): the candidates for
    an adaptive pool's filter."""
    return judges_with_label_counts(collection=collection, task="relevance")


def file_judges(*, collection: Collection, file: FileKind) -> QuerySet[Judge]:
    """Judges with labels of a family's file on the collection: the choices of its download."""
    return judges_with_labels(collection=collection, task=file.task)


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
    """The collection's pools with their kept counts (pairs, turns, turns holding pairs that entered
    unfiltered): one query on the pools alone, whatever their size."""
    return Pool.objects.filter(collection=collection).select_related("filter_judge")


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
    # judging's judge jobs of the collection.
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
        links=collection_links(collection_name=collection.name),
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


# --- Links and jobs of judging and crowd ------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    label: str
    url: str
    note: str = ""
    # The element id pages and tests find the link by.
    id: str = ""


@dataclass(frozen=True)
class Section:
    """A titled list of links on a page."""

    title: str
    id: str
    links: list[Link]
    empty: str = "None yet."


@dataclass(frozen=True)
class JobLine:
    """One background job, as a jobs table lists it."""

    label: str
    url: str
    collection: str
    what: str
    status: str
    progress: str = ""


def job_lines(*, collection_id: int | None, limit: int) -> list[JobLine]:
    """judging's judge jobs, of one collection (its id) or of all (None), newest first, at most `limit`."""
    return [
        JobLine(
            label=f"judge job {job.pk}",
            url=reverse("judging:job-detail", args=[job.pk]),
            collection=job.collection.name,
            what=f"{job.get_task_display()} · {job.judge.name}",
            status=job.get_status_display() + (f" ({job.units_failed} failed)" if job.units_failed else ""),
            progress=f"{job.units_done} / {job.units_total}",
        )
        for job in judge_jobs_recent(collection_id=collection_id, limit=limit)
    ]


def collection_links(*, collection_name: str) -> list[Link]:
    """The links at the top of a collection's dashboard: judging's pages of the collection, and its
    adjudication of relevance disagreements."""
    return [
        Link(
            label="Live agreement",
            url=reverse("judging:agreement-live", args=[collection_name]),
            id="live-agreement",
        ),
        Link(
            label="Nugget scores",
            url=reverse("judging:nugget-scores", args=[collection_name]),
            id="nugget-scores",
        ),
        Link(
            label="Nugget calibration",
            url=reverse("judging:nugget-calibration", args=[collection_name]),
            id="nugget-calibration",
        ),
        Link(
            label="Assessor quality",
            url=reverse("judging:quality-dashboard", args=[collection_name]),
            id="quality-dashboard",
        ),
        Link(label="Judges", url=reverse("judging:quality-judges", args=[collection_name]), id="judges-page"),
        Link(
            label="Adjudication",
            url=reverse("adjudication-assign", args=[collection_name]),
            id="adjudication-page",
        ),
        Link(
            label="Run reports", url=reverse("judging:quality-runs", args=[collection_name]), id="run-reports"
        ),
    ]


def work_links() -> list[Link]:
    """Kinds of work on everybody's home beside relevance, support and nuggets: crowd's batches."""
    return [
        Link(
            label="Crowd",
            url=reverse("crowd:home"),
            note="does a response contain a nugget? Batches of 11 questions.",
        )
    ]


def campaigns_section() -> Section:
    return Section(
        title="Crowd campaigns",
        id="home-campaigns",
        links=[
            Link(
                label=campaign.name,
                url=reverse("crowd:campaign", args=[campaign.name]),
                note=f"{campaign.collection.name} · {campaign.get_provider_display()}",
            )
            for campaign in campaigns_recent(limit=10)
        ],
    )


# --- The organiser's home --------------------------------------------------------------------------


def organiser_home(*, user: object) -> dict[str, object]:
    """What an organiser's home lists besides the collections: crowd's campaigns, and recent jobs
    (judging's judge jobs and uploads)."""
    return {
        "sections": [campaigns_section()],
        "job_lines": job_lines(collection_id=None, limit=10),
        "import_jobs": list(ImportJob.objects.select_related("collection")[:10]),
    }
