"""The crowd report of a campaign: workers, batches, cost and agreement (reads only)."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

import krippendorff
import numpy as np

from crowd.models import VOTING_STATUSES, BatchItem, CrowdAnswer, CrowdAssignment, CrowdCampaign

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


@dataclass
class CampaignReport:
    workers: list[WorkerRow] = field(default_factory=list)
    batches: list[BatchRow] = field(default_factory=list)
    reward_total: Decimal = Decimal("0")
    bonus_total: Decimal = Decimal("0")
    fee_total: Decimal = Decimal("0")
    alpha: float | None = None
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
    provisional = Counter(everything.provisional().values_list("batch_id", flat=True))
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
    for batch in campaign.batches.order_by("index"):
        mine = [a for a in assignments if a.batch_id == batch.id]
        report.batches.append(
            BatchRow(
                index=batch.index,
                status=batch.get_status_display(),
                hit_id=batch.hit_id,
                max_assignments=batch.max_assignments,
                submitted=len(mine),
                passed=sum(1 for a in mine if a.passed_tests),
                provisional=provisional[batch.id],
            )
        )
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
