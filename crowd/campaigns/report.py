"""The crowd report of a campaign: workers, batches, cost and agreement (reads only)."""

from __future__ import annotations

import statistics
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

import krippendorff
import numpy as np
from django.db.models import Count, F, Q, QuerySet, Sum
from django.utils import timezone

from annotation.models import NuggetSupport
from crowd.models import (
    VOTING_STATUSES,
    CrowdAnswer,
    CrowdAssignment,
    CrowdBatch,
    CrowdCampaign,
)

CENT = Decimal("0.01")
MTURK_FEE = Decimal("0.20")  # MTurk's commission on rewards for HITs with fewer than 10 assignments


@dataclass
class WorkerRow:
    worker_id: str
    assignments: int
    answers: int
    tests: int
    tests_right: int
    median_seconds: float | None

    @property
    def test_accuracy(self) -> float | None:
        return self.tests_right / self.tests if self.tests else None


@dataclass
class BatchRow:
    index: int
    status: str
    hit_id: str
    max_assignments: int
    submitted: int
    passed: int
    # Answers posted to the HIT page that MTurk has not confirmed: they neither count nor vote.
    provisional: int = 0
    # Places held by panel participants at work on the batch now (in-platform studies).
    held: int = 0
    state: str = ""
    # complete, full, open or closed: what the state says, for styling and counting.
    state_kind: str = ""


def batch_state(
    *, status: str, max_assignments: int, submitted: int, passed: int, held: int = 0
) -> tuple[str, str]:
    """What a batch's row says, and its kind: Complete when every place has an answer that passed the
    tests, Full when every place is answered but some failed (extend to replace them), otherwise its
    status with the places still free. A batch is never shown Open once no one can take it."""
    if submitted >= max_assignments:
        failed = submitted - passed
        if not failed:
            return "Complete", "complete"
        return f"Full: {failed} of {submitted} failed the tests", "full"
    free = max_assignments - submitted
    label = CrowdBatch.Status(status).label
    text = f"{label}: {free} of {max_assignments} places free"
    if held:
        text += f", {held} being answered now"
    kind = "open" if status in {CrowdBatch.Status.OPEN, CrowdBatch.Status.PUBLISHED} else "closed"
    return text, kind


@dataclass
class BatchSummary:
    """The campaign's batches and places at a glance, and what a panel still needs to finish them."""

    batches: int = 0
    complete: int = 0
    full: int = 0
    open: int = 0
    closed: int = 0
    places: int = 0
    answered: int = 0

    @property
    def places_left(self) -> int:
        return self.places - self.answered


@dataclass
class CampaignReport:
    workers: list[WorkerRow] = field(default_factory=list)
    batches: list[BatchRow] = field(default_factory=list)
    reward_total: Decimal = Decimal("0.00")
    bonus_total: Decimal = Decimal("0.00")
    fee_total: Decimal = Decimal("0.00")
    alpha: float | None = None
    summary: BatchSummary = field(default_factory=BatchSummary)
    # MTurk charges a fee on rewards and bonuses; in-platform campaigns have none to show.
    has_fee: bool = False

    @property
    def cost_total(self) -> Decimal:
        return self.reward_total + self.bonus_total + self.fee_total


def campaign_report(
    *,
    campaign: CrowdCampaign,
    batch_ids: Collection[int] | None = None,
    worker_ids: Collection[int] | None = None,
) -> CampaignReport:
    """Per worker test accuracy, answers and median time per HIT (accept to submit, or the time spent on
    its questions where no accept time is known); per batch status; cost: rewards and bonuses of approved
    (or still pending) assignments plus, on MTurk, its 20% fee on both; Krippendorff's alpha (nominal)
    among the workers who passed the tests, over the real pairs.

    `batch_ids` and `worker_ids` (CrowdWorker keys) limit the rows to one page of each table; the summary,
    cost and alpha always cover the whole campaign. Every figure is counted in the database, one grouped
    query per kind, so the report costs the same few queries however many answers a campaign has."""
    report = CampaignReport()
    _fill_batches(report, campaign, batch_ids)
    report.workers = _worker_rows(campaign, worker_ids)
    # Provisional (Accepted) assignments are not paid; rejected ones are not either.
    paid = (
        CrowdAssignment.objects.filter(batch__campaign=campaign)
        .exclude(status__in=[CrowdAssignment.Status.ACCEPTED, CrowdAssignment.Status.REJECTED])
        .aggregate(n=Count("pk"), bonus=Sum("bonus"))
    )
    report.reward_total = Decimal(str(campaign.reward)) * paid["n"]
    if paid["bonus"] is not None:
        # Back to cents, which every bonus is paid in.
        report.bonus_total = Decimal(paid["bonus"]).quantize(CENT)
    if campaign.provider == CrowdCampaign.Provider.MTURK:
        report.has_fee = True
        # MTurk charges its fee on bonuses as on rewards.
        report.fee_total = ((report.reward_total + report.bonus_total) * MTURK_FEE).quantize(CENT)
    report.alpha = _alpha(campaign)
    return report


def campaign_workers(*, campaign: CrowdCampaign) -> QuerySet[CrowdAssignment, tuple[int, str]]:
    """(worker key, worker id) of everyone with a confirmed or rejected assignment in the campaign, by
    worker id: the rows of the report's Workers table, to page through."""
    return (
        CrowdAssignment.objects.filter(batch__campaign=campaign)
        .exclude(status=CrowdAssignment.Status.ACCEPTED)
        .values_list("worker_id", "worker__worker_id")
        .order_by("worker__worker_id")
        .distinct()
    )


def _fill_batches(report: CampaignReport, campaign: CrowdCampaign, batch_ids: Collection[int] | None) -> None:
    """The summary over every batch, and the rows of the batches asked for, from one grouped count of
    assignments per batch and one row per batch (its status and places, not its answers)."""
    # In-platform, an Accepted row is a participant's held place (crowd/providers/panels/services.py); it counts while live.
    is_platform = campaign.provider == CrowdCampaign.Provider.PLATFORM
    hold_since = timezone.now() - timedelta(seconds=campaign.duration_seconds)
    accepted = Q(status=CrowdAssignment.Status.ACCEPTED)
    # A rejected assignment neither votes nor holds a place of its batch (crowd/answers/services.py); provisional
    # answers (the HIT page's, not yet confirmed by MTurk) are counted per batch only.
    counts = {
        row["batch_id"]: row
        for row in CrowdAssignment.objects.filter(batch__campaign=campaign)
        .values("batch_id")
        .annotate(
            submitted=Count("pk", filter=Q(status__in=VOTING_STATUSES)),
            passed=Count("pk", filter=Q(status__in=VOTING_STATUSES, passed_tests=True)),
            accepted=Count("pk", filter=accepted),
            live=Count("pk", filter=accepted & Q(accept_time__gte=hold_since)),
        )
        .order_by()
    }
    none = {"submitted": 0, "passed": 0, "accepted": 0, "live": 0}
    summary = report.summary
    batches = campaign.batches.order_by("index").values_list(
        "id", "index", "status", "max_assignments", "hit_id"
    )
    for batch_id, index, status, max_assignments, hit_id in batches:
        n = counts.get(batch_id, none)
        provisional, held = (0, n["live"]) if is_platform else (n["accepted"], 0)
        state, kind = batch_state(
            status=status,
            max_assignments=max_assignments,
            submitted=n["submitted"],
            passed=n["passed"],
            held=held,
        )
        summary.batches += 1
        setattr(summary, kind, getattr(summary, kind) + 1)
        summary.places += max_assignments
        summary.answered += min(n["submitted"], max_assignments)
        if batch_ids is not None and batch_id not in batch_ids:
            continue
        report.batches.append(
            BatchRow(
                index=index,
                status=CrowdBatch.Status(status).label,
                hit_id=hit_id,
                max_assignments=max_assignments,
                submitted=n["submitted"],
                passed=n["passed"],
                provisional=provisional,
                held=held,
                state=state,
                state_kind=kind,
            )
        )


def _worker_rows(campaign: CrowdCampaign, worker_ids: Collection[int] | None) -> list[WorkerRow]:
    """A row per worker with a confirmed or rejected assignment: one row per assignment for the median
    time (its answers' times summed in the database), one grouped count of answers per worker."""
    assignments = CrowdAssignment.objects.filter(batch__campaign=campaign).exclude(
        status=CrowdAssignment.Status.ACCEPTED
    )
    answers = CrowdAnswer.objects.filter(assignment__batch__campaign=campaign).exclude(
        assignment__status=CrowdAssignment.Status.ACCEPTED
    )
    if worker_ids is not None:
        assignments = assignments.filter(worker_id__in=worker_ids)
        answers = answers.filter(assignment__worker_id__in=worker_ids)
    times: dict[str, list[float | None]] = {}
    for worker_id, accept_time, submit_time, answered_ms in (
        assignments.annotate(answered_ms=Sum("answers__time_spent_ms"))
        .values_list("worker__worker_id", "accept_time", "submit_time", "answered_ms")
        .order_by()
    ):
        times.setdefault(worker_id, []).append(_work_seconds(accept_time, submit_time, answered_ms))
    counts = {
        row["assignment__worker__worker_id"]: row
        for row in answers.values("assignment__worker__worker_id")
        .annotate(
            n=Count("pk"),
            tests=Count("pk", filter=Q(item__test_question__isnull=False)),
            # A three-way test question is right only with its exact label (partial support is not support).
            right=Count(
                "pk",
                filter=Q(item__test_question__support="", item__test_question__answer=F("matched"))
                | Q(item__test_question__support__gt="", item__test_question__support=F("support")),
            ),
        )
        .order_by()
    }
    rows = []
    for worker_id in sorted(times):
        known = [seconds for seconds in times[worker_id] if seconds is not None]
        n = counts.get(worker_id, {"n": 0, "tests": 0, "right": 0})
        rows.append(
            WorkerRow(
                worker_id=worker_id,
                assignments=len(times[worker_id]),
                answers=n["n"],
                tests=n["tests"],
                tests_right=n["right"],
                median_seconds=statistics.median(known) if known else None,
            )
        )
    return rows


def _work_seconds(
    accept_time: datetime | None, submit_time: datetime | None, answered_ms: int | None
) -> float | None:
    # In-platform pages time each question but no one records an accept time; their work time is the sum.
    if accept_time and submit_time:
        return (submit_time - accept_time).total_seconds()
    if answered_ms is not None:
        return answered_ms / 1000
    return None


def _alpha(campaign: CrowdCampaign) -> float | None:
    # Per pair, how many passing workers gave each answer: Krippendorff's value counts, counted in the
    # database. A worker answers a pair once (one assignment per batch), so these are the workers' votes.
    # A three-way campaign counts its three answers, not the yes/no they collapse to.
    if campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT:
        values = [Q(support=label) for label in NuggetSupport.values]
    else:
        values = [Q(matched=False), Q(matched=True)]
    votes = (
        CrowdAnswer.objects.filter(
            item__batch__campaign=campaign,
            item__test_question__isnull=True,
            assignment__passed_tests=True,
            assignment__status__in=VOTING_STATUSES,
        )
        .values("item_id")
        .annotate(**{f"v{i}": Count("pk", filter=value) for i, value in enumerate(values)})
        # Pairs in a fixed order (batch, position): the same answers always give the same float.
        .order_by("item__batch__index", "item__position")
        .values_list(*(f"v{i}" for i in range(len(values))))
    )
    # Only pairs with two votes or more carry agreement; alpha needs two different answers among them.
    counts = np.array([row for row in votes if sum(row) >= 2], dtype=int).reshape(-1, len(values))
    if (counts.sum(axis=0) > 0).sum() < 2:
        return None
    return float(
        krippendorff.alpha(
            value_counts=counts,
            value_domain=[float(i) for i in range(len(values))],
            level_of_measurement="nominal",
        )
    )
