"""Reads for the organiser's console: pool sizes and savings, who does what in a campaign, judges by task,
and what the home page and a collection's dashboard list of judging and crowd (judge jobs, campaigns)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Model, Q, QuerySet
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
    Turn,
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


@dataclass(frozen=True)
class PaceLine:
    """One assessor's pace in a collection: relevance and PTKB judgments, those of the hour before it was
    read, judgments per working hour and median seconds per judgment (None: no working time, no timing)."""

    user_pk: int
    username: str
    judgments: int
    last_hour: int
    per_hour: float | None
    median_seconds: float | None


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


def campaign_dashboard(
    *, collection: Collection, pace: Iterable[PaceLine] = (), now: datetime | None = None
) -> Dashboard:
    """Per assessor: relevance units done, held under a live lease, and left for them to take, with their
    `pace` (`assessor_pace`, which the page reads from a stored report); leases about to run out; the
    collection's import and judge jobs. Each count is one grouped statement over the collection's copies,
    so the page's queries are the same whatever the units."""
    now = now or timezone.now()
    assignments = list(Assignment.objects.filter(pool__collection=collection).select_related("pool"))
    lines: dict[int, AssessorLine] = {}
    members = Assignment.assessors.through.objects.filter(assignment__pool__collection=collection)
    for user_pk, username in members.values_list("user_id", "user__username").distinct():
        lines[user_pk] = AssessorLine(username=username)
    copies = (
        WorkSlot.objects.filter(assignment__pool__collection=collection, assessor__isnull=False)
        .values("assessor_id", "assessor__username")
        .annotate(
            done=Count("id", filter=Q(completed_at__isnull=False)),
            held=Count("id", filter=Q(completed_at__isnull=True, leased_until__gte=now)),
        )
    )
    for row in copies:
        line = lines.setdefault(row["assessor_id"], AssessorLine(username=row["assessor__username"]))
        line.done, line.held = row["done"], row["held"]
    for user_pk, left in _units_left(collection, now):
        lines[user_pk].left = left
    expiring = [
        ExpiringLease(username, assignment, unit, leased_until)
        for username, assignment, unit, leased_until in WorkSlot.objects.filter(
            assignment__pool__collection=collection,
            assessor__isnull=False,
            completed_at__isnull=True,
            leased_until__gte=now,
            leased_until__lte=now + EXPIRING_WITHIN,
        )
        .order_by("leased_until", "pk")
        .values_list("assessor__username", "assignment__name", "unit__label", "leased_until")
        if leased_until is not None
    ]
    for pace_line in pace:
        line = lines.setdefault(pace_line.user_pk, AssessorLine(username=pace_line.username))
        line.judgments, line.last_hour = pace_line.judgments, pace_line.last_hour
        line.per_hour, line.median_seconds = pace_line.per_hour, pace_line.median_seconds
    import_jobs = list(ImportJob.objects.filter(collection=collection)[:20])
    return Dashboard(
        collection=collection,
        assessors=sorted(lines.values(), key=lambda line: line.username),
        expiring=expiring,
        assignments=assignments,
        support_assignments=TopicWork.objects.filter(
            kind=TopicWork.Kind.SUPPORT, topic__collection=collection
        ).count(),
        import_jobs=import_jobs,
        job_lines=job_lines(collection_id=collection.pk, limit=20),
        links=collection_links(collection_name=collection.name),
    )


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _units_left(collection: Collection, now: datetime) -> list[tuple[int, int]]:
    """(user pk, units left for them) for each member of the collection's assignments with any: the units
    someone could take now (a copy not complete, free or its lease run out), but those the member already
    holds or did a copy of. Counted per assignment, less each member's own: the statement reads the open
    units once, not once per member."""
    sql = f"""
        WITH takeable AS (
            SELECT DISTINCT s.unit_id, s.assignment_id
            FROM {_table(WorkSlot)} s
            JOIN {_table(Assignment)} a ON a.id = s.assignment_id
            JOIN {_table(Pool)} p ON p.id = a.pool_id
            WHERE p.collection_id = %(collection)s AND s.completed_at IS NULL
              AND (s.assessor_id IS NULL OR s.leased_until < %(now)s)
        ), per_assignment AS (
            SELECT assignment_id, COUNT(*) AS n FROM takeable GROUP BY assignment_id
        ), taken AS (
            SELECT t.assignment_id, o.assessor_id, COUNT(*) AS n
            FROM takeable t JOIN {_table(WorkSlot)} o ON o.unit_id = t.unit_id AND o.assessor_id IS NOT NULL
            GROUP BY t.assignment_id, o.assessor_id
        )
        SELECT m.user_id, SUM(p.n - COALESCE(k.n, 0))
        FROM {_table(Assignment.assessors.through)} m
        JOIN per_assignment p ON p.assignment_id = m.assignment_id
        LEFT JOIN taken k ON k.assignment_id = m.assignment_id AND k.assessor_id = m.user_id
        GROUP BY m.user_id
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, {"collection": collection.pk, "now": now})
        return [(user_pk, int(left)) for user_pk, left in cursor.fetchall()]


def assessor_pace(*, collection: Collection, now: datetime | None = None) -> list[PaceLine]:
    """Each assessor's relevance and PTKB judgments in the collection: how many, how many in the hour
    before `now`, per working hour (the gaps between one judgment and the next, but those over
    SITTING_GAP) and the median of the times the pages measured; one statement, its window and median in
    the database. It reads every judgment the assessors gave: the dashboard shows it as a stored report."""
    now = now or timezone.now()
    # The assessors' judges first, as an array: each label table is then read along its unique index
    # (judge, turn, ...) for those judges alone, never scanned with the machines' labels.
    stamps = " UNION ALL ".join(
        f"""SELECT j.user_id, r.created_at, r.time_spent_ms
            FROM {_table(model)} r
            JOIN {_table(Judge)} j ON j.id = r.judge_id
            JOIN {_table(Turn)} t ON t.id = r.turn_id
            WHERE r.judge_id = ANY(ARRAY(SELECT id FROM assessors)) AND t.collection_id = %(collection)s"""
        for model in (RelevanceJudgment, PtkbJudgment)
    )
    sql = f"""
        WITH assessors AS (
            SELECT id FROM {_table(Judge)} WHERE kind = %(kind)s AND user_id IS NOT NULL
        ), gaps AS (
            SELECT user_id, created_at, time_spent_ms,
                   created_at - LAG(created_at) OVER (PARTITION BY user_id ORDER BY created_at) AS gap
            FROM ({stamps}) stamps
        )
        SELECT g.user_id, u.username, COUNT(*),
               COUNT(*) FILTER (WHERE g.created_at >= %(hour_ago)s),
               EXTRACT(EPOCH FROM SUM(g.gap) FILTER (WHERE g.gap <= %(sitting_gap_s)s * INTERVAL '1 second')),
               PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY g.time_spent_ms)
        FROM gaps g JOIN {_table(get_user_model())} u ON u.id = g.user_id
        GROUP BY g.user_id, u.username
    """
    params: dict[str, int | float | str | datetime] = {
        "collection": collection.pk,
        "kind": Judge.Kind.ASSESSOR.value,
        "hour_ago": now - timedelta(hours=1),
        "sitting_gap_s": SITTING_GAP.total_seconds(),
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        PaceLine(
            user_pk=user_pk,
            username=username,
            judgments=judgments,
            last_hour=last_hour,
            per_hour=round(judgments / (float(working_s) / 3600), 1) if working_s else None,
            median_seconds=round(median_ms / 1000, 1) if median_ms is not None else None,
        )
        for user_pk, username, judgments, last_hour, working_s, median_ms in rows
    ]


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
