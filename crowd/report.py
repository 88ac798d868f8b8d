"""The crowd report of a campaign: workers, batches, cost and agreement (reads only)."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

import krippendorff
import numpy as np
from django.utils import timezone

from crowd.models import (
    VOTING_STATUSES,
    BatchItem,
    CrowdAnswer,
    CrowdAssignment,
    CrowdBatch,
    CrowdCampaign,
)

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
    reward_total: Decimal = Decimal("0")
    bonus_total: Decimal = Decimal("0")
    fee_total: Decimal = Decimal("0")
    alpha: float | None = None
    summary: BatchSummary = field(default_factory=BatchSummary)
    # MTurk charges a fee on rewards and bonuses; in-platform campaigns have none to show.
    has_fee: bool = False

    @property
    def cost_total(self) -> Decimal:
        return self.reward_total + self.bonus_total + self.fee_total


def campaign_report(*, campaign: CrowdCampaign) -> CampaignReport:
    """Per worker test accuracy, answers and median time per HIT (accept to submit, or the time spent on
    its questions where no accept time is known); per batch status; cost: rewards and bonuses of approved
    (or still pending) assignments plus, on MTurk, its 20% fee on both; Krippendorff's alpha (nominal)
    among the workers who passed the tests, over the real pairs."""
    report = CampaignReport()
    # Provisional answers (the HIT page's, not yet confirmed by MTurk) are counted per batch only.
    everything = CrowdAssignment.objects.filter(batch__campaign=campaign)
    assignments = list(
        everything.exclude(status=CrowdAssignment.Status.ACCEPTED).select_related("worker", "batch")
    )
    # In-platform, an Accepted row is a participant's held place (crowd/studies.py); it counts while live.
    is_platform = campaign.provider == CrowdCampaign.Provider.PLATFORM
    hold_since = timezone.now() - timedelta(seconds=campaign.duration_seconds)
    provisional: Counter[int] = Counter()
    held: Counter[int] = Counter()
    for batch_id, accept_time in everything.provisional().values_list("batch_id", "accept_time"):
        if not is_platform:
            provisional[batch_id] += 1
        elif accept_time is not None and accept_time >= hold_since:
            held[batch_id] += 1
    answers = list(
        CrowdAnswer.objects.filter(assignment__batch__campaign=campaign)
        .exclude(assignment__status=CrowdAssignment.Status.ACCEPTED)
        .select_related("item__test_question")
    )
    by_worker: dict[str, list[CrowdAssignment]] = {}
    for a in assignments:
        by_worker.setdefault(a.worker.worker_id, []).append(a)
    worker_of = {a.id: a.worker.worker_id for a in assignments}
    counts: dict[str, list[int]] = {w: [0, 0, 0] for w in by_worker}  # answers, tests, right
    # In-platform pages time each question but no one records an accept time; their work time is the sum.
    answered_ms: Counter[int] = Counter()
    for answer in answers:
        if answer.time_spent_ms is not None:
            answered_ms[answer.assignment_id] += answer.time_spent_ms
        row = counts[worker_of[answer.assignment_id]]
        row[0] += 1
        if answer.item.test_question is not None:
            row[1] += 1
            row[2] += answer.matched == answer.item.test_question.answer
    for worker_id in sorted(by_worker):
        times = [
            seconds for a in by_worker[worker_id] if (seconds := _work_seconds(a, answered_ms)) is not None
        ]
        n_answers, n_tests, n_right = counts[worker_id]
        report.workers.append(
            WorkerRow(
                worker_id=worker_id,
                assignments=len(by_worker[worker_id]),
                answers=n_answers,
                tests=n_tests,
                tests_right=n_right,
                median_seconds=statistics.median(times) if times else None,
            )
        )
    submitted: Counter[int] = Counter()
    passed: Counter[int] = Counter()
    for a in assignments:
        # A rejected assignment neither votes nor holds a place of its batch (crowd/answers.py).
        if a.status in VOTING_STATUSES:
            submitted[a.batch_id] += 1
            passed[a.batch_id] += bool(a.passed_tests)
    summary = report.summary
    for batch in campaign.batches.order_by("index"):
        state, kind = batch_state(
            status=batch.status,
            max_assignments=batch.max_assignments,
            submitted=submitted[batch.id],
            passed=passed[batch.id],
            held=held[batch.id],
        )
        report.batches.append(
            BatchRow(
                index=batch.index,
                status=batch.get_status_display(),
                hit_id=batch.hit_id,
                max_assignments=batch.max_assignments,
                submitted=submitted[batch.id],
                passed=passed[batch.id],
                provisional=provisional[batch.id],
                held=held[batch.id],
                state=state,
                state_kind=kind,
            )
        )
        summary.batches += 1
        setattr(summary, kind, getattr(summary, kind) + 1)
        summary.places += batch.max_assignments
        summary.answered += min(submitted[batch.id], batch.max_assignments)
    paid = [a for a in assignments if a.status != CrowdAssignment.Status.REJECTED]
    report.reward_total = Decimal(str(campaign.reward)) * len(paid)
    report.bonus_total = sum((Decimal(str(a.bonus)) for a in paid), Decimal("0"))
    if campaign.provider == CrowdCampaign.Provider.MTURK:
        report.has_fee = True
        # MTurk charges its fee on bonuses as on rewards.
        report.fee_total = ((report.reward_total + report.bonus_total) * MTURK_FEE).quantize(Decimal("0.01"))
    report.alpha = _alpha(campaign)
    return report


def _work_seconds(assignment: CrowdAssignment, answered_ms: Counter[int]) -> float | None:
    if assignment.work_seconds is not None:
        return assignment.work_seconds
    if assignment.id in answered_ms:
        return answered_ms[assignment.id] / 1000
    return None


def _alpha(campaign: CrowdCampaign) -> float | None:
    rows = CrowdAnswer.objects.filter(
        item__batch__campaign=campaign,
        item__test_question__isnull=True,
        assignment__passed_tests=True,
        assignment__status__in=VOTING_STATUSES,
    ).values_list("assignment__worker_id", "item_id", "matched")
    workers = sorted({w for w, _, _ in rows})
    items = list(
        BatchItem.objects.filter(batch__campaign=campaign, test_question__isnull=True).values_list(
            "id", flat=True
        )
    )
    if len(workers) < 2 or not items:
        return None
    w_index = {w: i for i, w in enumerate(workers)}
    i_index = {item: j for j, item in enumerate(items)}
    data = np.full((len(workers), len(items)), np.nan)
    for worker, item, matched in rows:
        data[w_index[worker], i_index[item]] = float(matched)
    pairable = np.sum(~np.isnan(data), axis=0) >= 2
    values = data[:, pairable]
    if values.size == 0 or len(np.unique(values[~np.isnan(values)])) < 2:
        return None
    return float(krippendorff.alpha(reliability_data=values, level_of_measurement="nominal"))
