"""MTurk side of a crowd campaign: a qualification test, publish batches as HITs, sync submitted
assignments, review, bonus, expire.

Services that call MTurk do the remote call first and record its result in a short transaction per HIT
or assignment, so a failure half way leaves the database agreeing with MTurk about everything done so
far, and running the command again carries on. Every call goes through crowd/providers/mturk/client.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.db import transaction

from core.wording import plural
from crowd.answers.services import answers_from_fields, assignment_confirm
from crowd.errors import CrowdError
from crowd.models import CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdQualification, CrowdWorker
from crowd.providers.mturk.client import (
    DEFAULT_QUALIFICATIONS,
    MTurkAnswerError,
    MTurkClient,
    MTurkError,
    MTurkNotFound,
)
from crowd.providers.mturk.qualification import qualification_test
from crowd.providers.mturk.selectors import campaign_qualification, campaign_test_questions, hit_token


def hit_url(*, batch: CrowdBatch, base_url: str) -> str:
    return f"{base_url.rstrip('/')}/crowd/hit/{hit_token(batch=batch)}/"


def campaign_publish(*, campaign: CrowdCampaign, client: MTurkClient, base_url: str) -> list[CrowdBatch]:
    """Create the campaign's HIT type and one ExternalQuestion HIT per unpublished batch."""
    if campaign.provider != CrowdCampaign.Provider.MTURK:
        raise CrowdError(f"campaign {campaign.name} is not an MTurk campaign")
    if not campaign.batches.exists():
        raise CrowdError(f"campaign {campaign.name} has no batches yet")
    qualifications = list(DEFAULT_QUALIFICATIONS)
    qualification = campaign_qualification(campaign=campaign)
    if qualification is not None:
        qualifications.append(qualification.requirement())
    if campaign.block_qualification_id:
        qualifications.append(
            {"QualificationTypeId": campaign.block_qualification_id, "Comparator": "DoesNotExist"}
        )
    hit_type_id = client.hit_type_create(
        title=campaign.title,
        description=campaign.description,
        keywords=campaign.keywords,
        reward=f"{Decimal(str(campaign.reward)):.2f}",
        duration_seconds=campaign.duration_seconds,
        auto_approval_delay_seconds=campaign.auto_approval_delay_seconds,
        qualification_requirements=qualifications,
    )
    if campaign.hit_type_id != hit_type_id:
        campaign.hit_type_id = hit_type_id
        campaign.save(update_fields=["hit_type_id"])
    published = []
    for batch in campaign.batches.filter(hit_id="").order_by("index"):
        token = f"assay-{campaign.id}-{batch.id}"
        # The annotation names the batch and its token, so a HIT whose creation answer was lost can be
        # found again on MTurk (the client does this when the retry meets the used token).
        hit_id = client.hit_create(
            hit_type_id=hit_type_id,
            question_url=hit_url(batch=batch, base_url=base_url),
            max_assignments=batch.max_assignments,
            lifetime_seconds=campaign.lifetime_seconds,
            annotation=f"{campaign.name}:{batch.index} {token}",
            unique_token=token,
        )
        with transaction.atomic():
            batch.hit_id = hit_id
            batch.status = CrowdBatch.Status.PUBLISHED
            batch.save(update_fields=["hit_id", "status"])
        published.append(batch)
    return published


# How long a worker has to take the qualification test once started.
TEST_DURATION_SECONDS = 20 * 60


def campaign_qualification_set(
    *,
    campaign: CrowdCampaign,
    client: MTurkClient,
    threshold: int,
    questions: int,
    test_duration_seconds: int = TEST_DURATION_SECONDS,
) -> tuple[CrowdQualification, bool]:
    """Make the campaign's qualification test on MTurk from its test questions, or, when it has one, set a
    new threshold for the HITs published from now on (the test itself stays as MTurk has it).

    Answers the qualification and whether it was made now. HITs already published keep the requirements
    they were made with.
    """
    if campaign.provider != CrowdCampaign.Provider.MTURK:
        raise CrowdError(f"campaign {campaign.name} is in the platform, not on MTurk")
    if not 0 <= threshold <= 100:
        raise CrowdError("the threshold is a share of the test right x 100, from 0 to 100")
    existing = campaign_qualification(campaign=campaign)
    if existing is not None:
        if existing.threshold != threshold:
            existing.threshold = threshold
            existing.save(update_fields=["threshold"])
        return existing, False
    chosen = campaign_test_questions(campaign=campaign)[:questions]
    if questions < 1 or len(chosen) < questions:
        raise CrowdError(
            f"campaign {campaign.name} has {plural(len(chosen), 'test question')} of its kind: "
            f"a test of {questions} cannot be made"
        )
    test = qualification_test(campaign=campaign, questions=chosen)
    info = client.qualification_test_create(
        name=f"Assay test ({campaign.name})",
        description=(
            f"A test of {plural(test.questions, 'question')} like those of the HITs '{campaign.title}'; "
            f"{threshold}% right qualifies."
        ),
        keywords=campaign.keywords,
        test_xml=test.test_xml,
        answer_key_xml=test.answer_key_xml,
        test_duration_seconds=test_duration_seconds,
    )
    with transaction.atomic():
        qualification = CrowdQualification.objects.create(
            campaign=campaign,
            qualification_type_id=info.qualification_type_id,
            status=info.status,
            threshold=threshold,
            questions=test.questions,
            test_duration_seconds=test_duration_seconds,
            test_xml=test.test_xml,
            answer_key_xml=test.answer_key_xml,
        )
    return qualification, True


@dataclass
class SyncResult:
    seen: int = 0
    stored: int = 0
    skipped: list[str] = field(default_factory=list)
    # Batches whose HIT MTurk no longer knows: marked MISSING and left out of later syncs.
    missing: list[str] = field(default_factory=list)
    # Batches MTurk could not be asked about this time (kept as they are; the next sync tries again).
    failed: list[str] = field(default_factory=list)
    # Answers posted to the HIT page that MTurk has not reported (yet, or ever: forged).
    unconfirmed: int = 0


def campaign_sync(*, campaign: CrowdCampaign, client: MTurkClient) -> SyncResult:
    """Fetch every submitted assignment of the campaign's HITs and store its answers (idempotent).

    What MTurk reports is the truth: an assignment id and worker id it lists confirm the provisional
    answers of the HIT page, or replace them when someone else posted under that id. One batch going
    wrong (a HIT that vanished, MTurk failing after retries) is reported and the others are synced.
    """
    result = SyncResult()
    batches = campaign.batches.exclude(hit_id="").exclude(status=CrowdBatch.Status.MISSING)
    for batch in batches.order_by("index"):
        size = batch.items.count()
        try:
            infos = list(client.assignments_list(hit_id=batch.hit_id))
        except MTurkNotFound as exc:
            with transaction.atomic():
                batch.status = CrowdBatch.Status.MISSING
                batch.save(update_fields=["status"])
            result.missing.append(f"batch {batch.index} (HIT {batch.hit_id}): {exc}")
            continue
        except MTurkError as exc:
            result.failed.append(f"batch {batch.index} (HIT {batch.hit_id}): {exc}")
            continue
        for info in infos:
            result.seen += 1
            try:
                answers, times = answers_from_fields(info.answers(), size=size, kind=campaign.kind)
                assignment_confirm(
                    batch=batch,
                    worker_id=info.worker_id,
                    answers=answers,
                    times_ms=times,
                    assignment_id=info.assignment_id,
                    status=info.status,
                    accept_time=info.accept_time,
                    submit_time=info.submit_time,
                )
                result.stored += 1
            except (CrowdError, MTurkAnswerError) as exc:
                result.skipped.append(f"{info.assignment_id}: {exc}")
    result.unconfirmed = CrowdAssignment.objects.filter(batch__campaign=campaign).provisional().count()
    return result


REJECT_FEEDBACK = (
    "Your answer to the control question in this HIT was wrong (its answer is unambiguous), "
    "so this assignment is rejected as stated in the HIT instructions."
)


@dataclass
class ReviewResult:
    approved: int = 0
    rejected: int = 0
    blocked: int = 0


def campaign_review(
    *, campaign: CrowdCampaign, client: MTurkClient, reject_failed: bool = False, block_failed: bool = False
) -> ReviewResult:
    """Approve submitted assignments; those that failed a test question are approved too unless the
    stated policy `reject_failed` is on, in which case they are rejected with REJECT_FEEDBACK.
    `block_failed` gives failed workers a qualification that later HITs of the campaign exclude."""
    result = ReviewResult()
    submitted = CrowdAssignment.objects.filter(
        batch__campaign=campaign, status=CrowdAssignment.Status.SUBMITTED
    ).select_related("worker")
    failed_workers: set[CrowdWorker] = set()
    for assignment in submitted:
        failed = assignment.passed_tests is False
        if failed:
            failed_workers.add(assignment.worker)
        if failed and reject_failed:
            client.assignment_reject(assignment_id=assignment.assignment_id, feedback=REJECT_FEEDBACK)
            assignment.status, assignment.feedback = CrowdAssignment.Status.REJECTED, REJECT_FEEDBACK
            result.rejected += 1
        else:
            client.assignment_approve(assignment_id=assignment.assignment_id)
            assignment.status = CrowdAssignment.Status.APPROVED
            result.approved += 1
        with transaction.atomic():
            assignment.save(update_fields=["status", "feedback"])
    if block_failed and failed_workers:
        if not campaign.block_qualification_id:
            campaign.block_qualification_id = client.qualification_type_create(
                name=f"Assay blocked ({campaign.name})",
                description="Workers who failed control questions of this study.",
            )
            campaign.save(update_fields=["block_qualification_id"])
        for worker in sorted(failed_workers, key=lambda w: w.worker_id):
            client.qualification_assign(
                qualification_type_id=campaign.block_qualification_id, worker_id=worker.worker_id
            )
            result.blocked += 1
    return result


@dataclass
class BonusResult:
    paid: int = 0
    total: Decimal = Decimal("0.00")


def campaign_bonus(
    *, campaign: CrowdCampaign, client: MTurkClient | None, amount: str | Decimal, reason: str
) -> BonusResult:
    """Pay `amount` once to each approved assignment that passed its test questions and has no bonus yet.

    The MTurk call comes first and is made with a per-assignment token, so a rerun after a failure
    carries on without paying anyone twice; in-platform campaigns only record the amount.
    """
    try:
        value = Decimal(str(amount)).quantize(Decimal("0.01"))
    except InvalidOperation:
        raise CrowdError(f"bonus {amount!r} is not an amount in USD") from None
    if value <= 0:
        raise CrowdError("a bonus must be more than 0.00 USD")
    if not reason.strip():
        raise CrowdError("MTurk shows workers the reason for a bonus: give one")
    if campaign.provider == CrowdCampaign.Provider.MTURK and client is None:
        raise CrowdError(f"campaign {campaign.name} is on MTurk: bonuses need the MTurk client")
    result = BonusResult()
    due = CrowdAssignment.objects.filter(
        batch__campaign=campaign, status=CrowdAssignment.Status.APPROVED, passed_tests=True, bonus=0
    ).select_related("worker")
    for assignment in due.order_by("id"):
        if campaign.provider == CrowdCampaign.Provider.MTURK and client is not None:
            client.bonus_send(
                worker_id=assignment.worker.worker_id,
                assignment_id=assignment.assignment_id,
                amount=f"{value:.2f}",
                reason=reason,
                unique_token=f"assay-bonus-{assignment.id}",
            )
        with transaction.atomic():
            assignment.bonus = value
            assignment.save(update_fields=["bonus"])
        result.paid += 1
        result.total += value
    return result


def campaign_expire(*, campaign: CrowdCampaign, client: MTurkClient) -> int:
    """Expire the campaign's live HITs at once, so no new worker can accept them."""
    count = 0
    for batch in campaign.batches.filter(status=CrowdBatch.Status.PUBLISHED).exclude(hit_id=""):
        client.hit_expire(hit_id=batch.hit_id)
        with transaction.atomic():
            batch.status = CrowdBatch.Status.EXPIRED
            batch.save(update_fields=["status"])
        count += 1
    return count
