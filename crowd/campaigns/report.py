"""The crowd report of a campaign: workers, batches, cost and agreement (reads only)."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from crowd.models import (
    BatchFigures,
    CampaignFigures,
    CrowdAssignment,
    CrowdBatch,
    CrowdCampaign,
    VoteProfile,
    WorkerFigures,
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
    cost and alpha always cover the whole campaign. They come from the figures the triggers keep
    (crowd/figures): the summary, cost and alpha read one row of the campaign and its pairs' vote
    profiles, the rows read one page's batches and workers, so the report costs the same few short queries
    however many answers a campaign has."""
    report = CampaignReport()
    figures = CampaignFigures.objects.filter(campaign=campaign).first() or CampaignFigures(campaign=campaign)
    _fill_batches(report, campaign, figures, batch_ids)
    report.workers = _worker_rows(campaign, worker_ids)
    # Provisional (Accepted) assignments are not paid; rejected ones are not either.
    report.reward_total = Decimal(str(campaign.reward)) * figures.paid
    # Back to cents, which every bonus is paid in.
    report.bonus_total = Decimal(figures.bonus).quantize(CENT)
    if campaign.provider == CrowdCampaign.Provider.MTURK:
        report.has_fee = True
        # MTurk charges its fee on bonuses as on rewards.
        report.fee_total = ((report.reward_total + report.bonus_total) * MTURK_FEE).quantize(CENT)
    report.alpha = _alpha(campaign)
    return report


def campaign_workers(*, campaign: CrowdCampaign) -> QuerySet[WorkerFigures, tuple[int, str]]:
    """(worker key, worker id) of everyone with a confirmed or rejected assignment in the campaign, by
    worker id: the rows of the report's Workers table, to page through."""
    return (
        WorkerFigures.objects.filter(campaign_id=campaign.pk, assignments__gt=0)
        .values_list("worker_id", "worker__worker_id")
        .order_by("worker__worker_id")
    )


def _fill_batches(
    report: CampaignReport,
    campaign: CrowdCampaign,
    figures: CampaignFigures,
    batch_ids: Collection[int] | None,
) -> None:
    """The summary from the campaign's kept figures, and the rows of the batches asked for from theirs,
    with the places panel participants hold now (which the clock, not a write, ends) counted for those
    batches only."""
    report.summary = BatchSummary(
        batches=figures.batches,
        complete=figures.batches_complete,
        full=figures.batches_full,
        open=figures.batches_open,
        closed=figures.batches_closed,
        places=figures.places,
        answered=figures.answered,
    )
    # In-platform, an Accepted row is a participant's held place (crowd/providers/panels/services.py); it
    # counts while live. A rejected assignment neither votes nor holds a place of its batch
    # (crowd/answers/services.py); provisional answers (the HIT page's, not yet confirmed by MTurk) are
    # counted per batch only.
    is_platform = campaign.provider == CrowdCampaign.Provider.PLATFORM
    batches = campaign.batches.order_by("index")
    if batch_ids is not None:
        batches = batches.filter(pk__in=batch_ids)
    rows = list(batches.values_list("id", "index", "status", "hit_id"))
    ids = [row[0] for row in rows]
    counted = {f.batch_id: f for f in BatchFigures.objects.filter(batch_id__in=ids)}
    held: dict[int, int] = {}
    if is_platform:
        hold_since = timezone.now() - timedelta(seconds=campaign.duration_seconds)
        held = dict(
            CrowdAssignment.objects.filter(
                batch_id__in=ids, status=CrowdAssignment.Status.ACCEPTED, accept_time__gte=hold_since
            )
            .values("batch_id")
            .annotate(n=Count("pk"))
            .values_list("batch_id", "n")
            .order_by()
        )
    for batch_id, index, status, hit_id in rows:
        n = counted[batch_id]
        provisional, live = (0, held.get(batch_id, 0)) if is_platform else (n.accepted, 0)
        state, kind = batch_state(
            status=status,
            max_assignments=n.max_assignments,
            submitted=n.submitted,
            passed=n.passed,
            held=live,
        )
        report.batches.append(
            BatchRow(
                index=index,
                status=CrowdBatch.Status(status).label,
                hit_id=hit_id,
                max_assignments=n.max_assignments,
                submitted=n.submitted,
                passed=n.passed,
                provisional=provisional,
                held=live,
                state=state,
                state_kind=kind,
            )
        )


def _worker_rows(campaign: CrowdCampaign, worker_ids: Collection[int] | None) -> list[WorkerRow]:
    """A row per worker with a confirmed or rejected assignment: their kept figures, and one row per
    assignment for the median time (its answers' times summed in the database)."""
    figures = WorkerFigures.objects.filter(campaign_id=campaign.pk, assignments__gt=0)
    assignments = CrowdAssignment.objects.filter(batch__campaign=campaign).exclude(
        status=CrowdAssignment.Status.ACCEPTED
    )
    if worker_ids is not None:
        figures = figures.filter(worker_id__in=worker_ids)
        assignments = assignments.filter(worker_id__in=worker_ids)
    times: dict[int, list[float | None]] = {}
    for worker_pk, accept_time, submit_time, answered_ms in (
        assignments.annotate(answered_ms=Sum("answers__time_spent_ms"))
        .values_list("worker_id", "accept_time", "submit_time", "answered_ms")
        .order_by()
    ):
        times.setdefault(worker_pk, []).append(_work_seconds(accept_time, submit_time, answered_ms))
    rows = []
    for f in figures.select_related("worker").order_by("worker__worker_id"):
        known = [seconds for seconds in times.get(f.worker_id, []) if seconds is not None]
        rows.append(
            WorkerRow(
                worker_id=f.worker.worker_id,
                assignments=f.assignments,
                answers=f.answers,
                tests=f.tests,
                tests_right=f.tests_right,
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
    """Krippendorff's alpha (nominal) over the pairs with two votes or more of passing workers, from the
    campaign's vote profiles (how many pairs got each combination of answers). A three-way campaign
    counts its three answers, not the yes/no they collapse to."""
    values = 3 if campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT else 2
    profiles = [
        ((v0, v1, v2)[:values], units)
        for v0, v1, v2, units in VoteProfile.objects.filter(campaign_id=campaign.pk, units__gt=0)
        .order_by("v0", "v1", "v2")
        .values_list("v0", "v1", "v2", "units")
    ]
    return nominal_alpha(profiles)


def nominal_alpha(profiles: Iterable[tuple[Sequence[int], int]]) -> float | None:
    """Krippendorff's alpha, nominal, of units given as (value counts, how many units have them): the
    coincidence matrix is a sum over units, so units alike are added at once. The `krippendorff` package
    takes one row per unit, which at a campaign's size is millions; tests hold this to it. None when fewer
    than two values occur among units with two values or more."""
    size = 0
    coincidences: dict[tuple[int, int], float] = {}
    for counts, units in profiles:
        pairable = sum(counts)
        if pairable < 2 or units <= 0:
            continue
        size = max(size, len(counts))
        for c, n_c in enumerate(counts):
            for k, n_k in enumerate(counts):
                together = n_c * (n_k - (c == k))
                if together:
                    coincidences[c, k] = coincidences.get((c, k), 0.0) + units * together / (pairable - 1)
    totals = [sum(coincidences.get((c, k), 0.0) for k in range(size)) for c in range(size)]
    if sum(1 for total in totals if total > 0) < 2:
        return None
    n = sum(totals)
    observed = sum(value for (c, k), value in coincidences.items() if c != k)
    expected = sum(totals[c] * totals[k] for c in range(size) for k in range(size) if c != k)
    return 1 - (n - 1) * observed / expected
