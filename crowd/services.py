"""Writes for crowd nugget matching: compose batches, take answers, talk to MTurk, aggregate labels.

Each service is one transaction. Services that call MTurk do the remote call first and record its
result in a short transaction per HIT or assignment, so a failure half way leaves the database
agreeing with MTurk about everything done so far, and running the command again carries on.
"""

from __future__ import annotations

import random
import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.judgments import NtrRow, ntr_judgments_upsert
from annotation.models import Collection, Judge, Nugget, Run, Turn
from annotation.services import judge_get_or_create
from crowd.client import DEFAULT_QUALIFICATIONS, MTurkClient
from crowd.models import (
    BatchItem,
    CrowdAnswer,
    CrowdAssignment,
    CrowdBatch,
    CrowdCampaign,
    CrowdWorker,
    TestQuestion,
)
from crowd.selectors import campaign_pairs, hit_token


class CrowdError(Exception):
    """Bad input to a crowd service; views answer 400 with it, commands raise CommandError."""


YES = {"yes", "y", "1", "true"}
NO = {"no", "n", "0", "false"}


def parse_vote(value: str) -> bool:
    text = value.strip().lower()
    if text in YES:
        return True
    if text in NO:
        return False
    raise CrowdError(f"answer must be yes or no, not {value!r}")


# --- campaigns and batches -----------------------------------------------------------------------


@transaction.atomic
def campaign_create(
    *,
    collection: Collection,
    name: str,
    nugget_judge: Judge,
    turns: Iterable[Turn],
    runs: Iterable[Run],
    provider: str = CrowdCampaign.Provider.PLATFORM,
    label_judge_name: str = "mturk-majority",
    seed: int = 0,
    batch_size: int = 10,
    tests_per_batch: int = 1,
    assignments_per_batch: int = 3,
    skip_duplicates: bool = True,
    **hit_settings: Any,
) -> CrowdCampaign:
    """A campaign over chosen turns and runs, labelled as the crowd judge `label_judge_name`."""
    if CrowdCampaign.objects.filter(name=name).exists():
        raise CrowdError(f"a campaign named {name!r} exists")
    if batch_size < 1 or assignments_per_batch < 1 or tests_per_batch < 0:
        raise CrowdError(
            "batch size and assignments per batch must be at least 1, tests per batch at least 0"
        )
    if "reward" in hit_settings:
        try:
            hit_settings["reward"] = Decimal(str(hit_settings["reward"])).quantize(Decimal("0.01"))
        except InvalidOperation:
            raise CrowdError(f"reward {hit_settings['reward']!r} is not an amount in USD") from None
    label_judge = judge_get_or_create(
        name=label_judge_name,
        kind=Judge.Kind.CROWD,
        description="Majority vote of crowd workers who passed the batch's test questions.",
    )
    if label_judge.kind != Judge.Kind.CROWD:
        raise CrowdError(f"judge {label_judge_name!r} exists and is not a crowd judge")
    campaign = CrowdCampaign.objects.create(
        collection=collection,
        name=name,
        provider=provider,
        nugget_judge=nugget_judge,
        label_judge=label_judge,
        seed=seed,
        batch_size=batch_size,
        tests_per_batch=tests_per_batch,
        assignments_per_batch=assignments_per_batch,
        skip_duplicates=skip_duplicates,
        **hit_settings,
    )
    turns, runs = list(turns), list(runs)
    if any(t.collection_id != collection.id for t in turns) or any(
        r.collection_id != collection.id for r in runs
    ):
        raise CrowdError("turns and runs must belong to the campaign's collection")
    campaign.turns.set(turns)
    campaign.runs.set(runs)
    return campaign


@transaction.atomic
def test_question_create(
    *,
    collection: Collection,
    response_text: str,
    nugget_text: str,
    answer: bool,
    origin: Nugget | None = None,
) -> TestQuestion:
    """An organiser-written test question (or a generated one when `origin` is given)."""
    if not response_text.strip() or not nugget_text.strip():
        raise CrowdError("a test question needs a response text and a nugget text")
    question, _ = TestQuestion.objects.get_or_create(
        collection=collection,
        response_text=response_text,
        nugget_text=nugget_text,
        defaults={
            "answer": answer,
            "origin": origin,
            "source": TestQuestion.Source.GENERATED if origin else TestQuestion.Source.ORGANISER,
        },
    )
    return question


@transaction.atomic
def test_questions_generate(*, campaign: CrowdCampaign, count: int) -> list[TestQuestion]:
    """Test questions with an obvious answer, half yes and half no, made from the campaign's nuggets.

    Yes: a response that states the nugget word for word (among another turn's response text).
    No: a nugget of one conversation against a response of a different conversation.
    """
    rng = random.Random(campaign.seed)
    pairs = campaign_pairs(campaign=campaign)
    nuggets = sorted({n.id: n for _, n in pairs}.values(), key=lambda n: n.id)
    responses = sorted({r.id: r for r, _ in pairs}.values(), key=lambda r: r.id)
    topics = {n.turn.topic_id for n in nuggets}
    if len(nuggets) < 1 or len(topics) < 2:
        raise CrowdError("generating test questions needs nuggets from at least two conversations")
    made: list[TestQuestion] = []
    for i in range(count):
        nugget = nuggets[rng.randrange(len(nuggets))]
        others = [r for r in responses if r.turn.topic_id != nugget.turn.topic_id]
        filler = others[rng.randrange(len(others))].text if others else ""
        if i % 2 == 0:
            sentences = [s for s in filler.split(". ") if s][:2]
            text = ". ".join([*sentences[:1], nugget.text.rstrip("."), *sentences[1:2]]).strip() + "."
            answer = True
        else:
            text, answer = filler, False
        if not text.strip():
            continue
        made.append(
            test_question_create(
                collection=campaign.collection,
                response_text=text,
                nugget_text=nugget.text,
                answer=answer,
                origin=nugget,
            )
        )
    return made


@transaction.atomic
def batches_compose(*, campaign: CrowdCampaign) -> list[CrowdBatch]:
    """Shuffle the pairs with the campaign's seed, cut them into batches, and put test questions in.

    Each batch gets `tests_per_batch` test questions at seeded random positions, drawn so that yes and
    no answers alternate across the campaign. The same seed and the same data give the same batches.
    """
    if campaign.batches.exists():
        raise CrowdError(f"campaign {campaign.name} already has batches")
    pairs = campaign_pairs(campaign=campaign)
    if not pairs:
        raise CrowdError("no pairs: the chosen turns have no responses of the chosen runs or no nuggets")
    pool = list(TestQuestion.objects.filter(collection=campaign.collection).order_by("id"))
    yes = [q for q in pool if q.answer]
    no = [q for q in pool if not q.answer]
    if campaign.tests_per_batch and (not yes or not no):
        raise CrowdError("the test question pool needs at least one yes and one no question")
    rng = random.Random(campaign.seed)
    rng.shuffle(pairs)
    rng.shuffle(yes)
    rng.shuffle(no)
    batches: list[CrowdBatch] = []
    items: list[BatchItem] = []
    test_count = 0
    for index, start in enumerate(range(0, len(pairs), campaign.batch_size)):
        chunk: list[Any] = list(pairs[start : start + campaign.batch_size])
        for _ in range(campaign.tests_per_batch):
            source = yes if test_count % 2 == 0 else no
            question = source[(test_count // 2) % len(source)]
            test_count += 1
            chunk.insert(rng.randrange(len(chunk) + 1), question)
        batch = CrowdBatch.objects.create(
            campaign=campaign, index=index, max_assignments=campaign.assignments_per_batch
        )
        batches.append(batch)
        for position, entry in enumerate(chunk):
            if isinstance(entry, TestQuestion):
                items.append(BatchItem(batch=batch, position=position, test_question=entry))
            else:
                response, nugget = entry
                items.append(BatchItem(batch=batch, position=position, response=response, nugget=nugget))
    BatchItem.objects.bulk_create(items)
    return batches


# --- workers and answers -------------------------------------------------------------------------


def worker_get_or_create(*, worker_id: str, user: Any = None) -> CrowdWorker:
    worker, _ = CrowdWorker.objects.get_or_create(worker_id=worker_id, defaults={"user": user})
    return worker


def worker_for_user(*, user: Any) -> CrowdWorker:
    worker = CrowdWorker.objects.filter(user=user).first()
    return worker or worker_get_or_create(worker_id=f"user:{user.get_username()}", user=user)


@transaction.atomic
def assignment_submit(
    *,
    batch: CrowdBatch,
    worker: CrowdWorker,
    answers: Mapping[int, bool],
    times_ms: Mapping[int, int] | None = None,
    assignment_id: str = "",
    status: str = CrowdAssignment.Status.SUBMITTED,
    accept_time: datetime | None = None,
    submit_time: datetime | None = None,
) -> CrowdAssignment:
    """Store one worker's answers to a batch (keyed by 0-based position) and score its test questions.

    Storing the same assignment again replaces its answers with the same values, so a resubmitted page
    or a repeated sync adds no rows.
    """
    items = {item.position: item for item in batch.items.select_related("test_question")}
    if set(answers) != set(items):
        missing = sorted(set(items) - set(answers))
        extra = sorted(set(answers) - set(items))
        raise CrowdError(
            f"answers must cover positions 1..{len(items)}"
            + (f"; missing {[p + 1 for p in missing]}" if missing else "")
            + (f"; unknown {[p + 1 for p in extra]}" if extra else "")
        )
    if worker.blocked:
        raise CrowdError("this worker is blocked")
    existing = CrowdAssignment.objects.filter(batch=batch, worker=worker).first()
    if existing is not None and assignment_id and existing.assignment_id != assignment_id:
        raise CrowdError("this worker already answered this batch")
    if existing is None and assignment_id:
        existing = CrowdAssignment.objects.filter(assignment_id=assignment_id).first()
        if existing is not None and (existing.batch_id != batch.id or existing.worker_id != worker.id):
            raise CrowdError("assignment id belongs to another batch or worker")
    tests = [item for item in items.values() if item.is_test]
    passed = all(answers[item.position] == item.test_question.answer for item in tests)
    now = timezone.now()
    if existing is None:
        assignment = CrowdAssignment.objects.create(
            batch=batch,
            worker=worker,
            assignment_id=assignment_id or f"local-{uuid.uuid4().hex}",
            status=status,
            accept_time=accept_time,
            submit_time=submit_time or now,
            passed_tests=passed,
        )
    else:
        assignment = existing
        # A status decided by review (Approved/Rejected) is not walked back by a later sync.
        if assignment.status in {CrowdAssignment.Status.ACCEPTED, CrowdAssignment.Status.SUBMITTED}:
            assignment.status = status
        assignment.accept_time = accept_time or assignment.accept_time
        assignment.submit_time = submit_time or assignment.submit_time
        assignment.passed_tests = passed
        assignment.save()
    times_ms = times_ms or {}
    stored = {a.item_id: a for a in assignment.answers.all()}
    for position, matched in answers.items():
        item = items[position]
        ms = times_ms.get(position)
        answer = stored.get(item.id)
        if answer is None:
            CrowdAnswer.objects.create(assignment=assignment, item=item, matched=matched, time_spent_ms=ms)
        elif answer.matched != matched or (ms is not None and answer.time_spent_ms != ms):
            answer.matched = matched
            answer.time_spent_ms = ms if ms is not None else answer.time_spent_ms
            answer.save(update_fields=["matched", "time_spent_ms"])
    _worker_votes_store(batch=batch, worker=worker, items=items, answers=answers, times_ms=times_ms)
    return assignment


WORKER_JUDGE_PREFIX = {
    CrowdCampaign.Provider.MTURK: "mturk-worker",
    CrowdCampaign.Provider.PLATFORM: "crowd-worker",
}


def worker_judge_name(*, worker: CrowdWorker, provider: str) -> str:
    return f"{WORKER_JUDGE_PREFIX.get(provider, 'crowd-worker')}:{worker.worker_id}"


def worker_judge_get_or_create(*, worker: CrowdWorker, provider: str) -> Judge:
    """The crowd judge whose NtR labels are one worker's raw votes, named after the worker."""
    name = worker_judge_name(worker=worker, provider=provider)
    judge = judge_get_or_create(
        name=name,
        kind=Judge.Kind.CROWD,
        description="Raw votes of one crowd worker, test questions and failed assignments included.",
    )
    if judge.kind != Judge.Kind.CROWD:
        raise CrowdError(f"judge {name!r} exists and is not a crowd judge")
    return judge


def _worker_votes_store(
    *,
    batch: CrowdBatch,
    worker: CrowdWorker,
    items: Mapping[int, BatchItem],
    answers: Mapping[int, bool],
    times_ms: Mapping[int, int],
) -> None:
    # Each worker's votes are also NtR judgments of their own judge, so the agreement capability can
    # compare workers with each other and with machine judges on the pairs they share. All votes are
    # kept, those of workers who failed a test question too: who counts is the majority vote's business.
    judge = worker_judge_get_or_create(worker=worker, provider=batch.campaign.provider)
    votes = {
        (items[p].response_id, items[p].nugget_id): (matched, times_ms.get(p))
        for p, matched in answers.items()
        if not items[p].is_test
    }
    if not votes:
        return
    ntr_judgments_upsert(
        judge=judge,
        rows=[
            NtrRow(response_id=response_id, nugget_id=nugget_id, matched=matched, time_spent_ms=ms)
            for (response_id, nugget_id), (matched, ms) in votes.items()
        ],
    )


def answers_from_fields(fields: Mapping[str, str], *, size: int) -> tuple[dict[int, bool], dict[int, int]]:
    """Answers named q1..qN (yes/no) and optional ms1..msN (milliseconds), as the worker page posts them."""
    answers: dict[int, bool] = {}
    times: dict[int, int] = {}
    for n in range(1, size + 1):
        value = fields.get(f"q{n}")
        if value is None or value == "":
            raise CrowdError(f"question {n} has no answer")
        answers[n - 1] = parse_vote(value)
        ms = fields.get(f"ms{n}")
        if ms not in (None, ""):
            try:
                times[n - 1] = max(0, int(float(ms)))
            except ValueError:
                raise CrowdError(f"ms{n} must be a number of milliseconds") from None
    return answers, times


def parse_answer_xml(xml: str) -> dict[str, str]:
    """MTurk's QuestionFormAnswers document as {QuestionIdentifier: FreeText}."""
    if not xml:
        return {}
    try:
        root = ET.fromstring(xml.encode() if isinstance(xml, str) else xml)
    except ET.ParseError as exc:
        raise CrowdError(f"answer XML does not parse: {exc}") from None
    fields: dict[str, str] = {}
    for answer in root.iter():
        if answer.tag.rsplit("}", 1)[-1] != "Answer":
            continue
        ident = text = None
        for child in answer:
            tag = child.tag.rsplit("}", 1)[-1]
            if tag == "QuestionIdentifier":
                ident = (child.text or "").strip()
            elif tag == "FreeText":
                text = child.text or ""
        if ident:
            fields[ident] = text or ""
    return fields


# --- MTurk ---------------------------------------------------------------------------------------


def hit_url(*, batch: CrowdBatch, base_url: str) -> str:
    return f"{base_url.rstrip('/')}/crowd/hit/{hit_token(batch=batch)}/"


def campaign_publish(*, campaign: CrowdCampaign, client: MTurkClient, base_url: str) -> list[CrowdBatch]:
    """Create the campaign's HIT type and one ExternalQuestion HIT per unpublished batch."""
    if campaign.provider != CrowdCampaign.Provider.MTURK:
        raise CrowdError(f"campaign {campaign.name} is not an MTurk campaign")
    if not campaign.batches.exists():
        raise CrowdError(f"campaign {campaign.name} has no batches yet")
    qualifications = list(DEFAULT_QUALIFICATIONS)
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
        hit_id = client.hit_create(
            hit_type_id=hit_type_id,
            question_url=hit_url(batch=batch, base_url=base_url),
            max_assignments=batch.max_assignments,
            lifetime_seconds=campaign.lifetime_seconds,
            annotation=f"{campaign.name}:{batch.index}",
            unique_token=f"assay-{campaign.id}-{batch.id}",
        )
        with transaction.atomic():
            batch.hit_id = hit_id
            batch.status = CrowdBatch.Status.PUBLISHED
            batch.save(update_fields=["hit_id", "status"])
        published.append(batch)
    return published


@dataclass
class SyncResult:
    seen: int = 0
    stored: int = 0
    skipped: list[str] = field(default_factory=list)


def campaign_sync(*, campaign: CrowdCampaign, client: MTurkClient) -> SyncResult:
    """Fetch every submitted assignment of the campaign's HITs and store its answers (idempotent)."""
    result = SyncResult()
    for batch in campaign.batches.exclude(hit_id="").order_by("index"):
        size = batch.items.count()
        for info in client.assignments_list(hit_id=batch.hit_id):
            result.seen += 1
            try:
                answers, times = answers_from_fields(parse_answer_xml(info.answer_xml), size=size)
                assignment_submit(
                    batch=batch,
                    worker=worker_get_or_create(worker_id=info.worker_id),
                    answers=answers,
                    times_ms=times,
                    assignment_id=info.assignment_id,
                    status=info.status,
                    accept_time=info.accept_time,
                    submit_time=info.submit_time,
                )
                result.stored += 1
            except CrowdError as exc:
                result.skipped.append(f"{info.assignment_id}: {exc}")
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


# --- aggregation ---------------------------------------------------------------------------------


@dataclass
class AggregateResult:
    labelled: int = 0
    yes: int = 0
    no: int = 0
    unresolved: list[BatchItem] = field(default_factory=list)
    discarded_assignments: int = 0


VOTING_STATUSES = [
    CrowdAssignment.Status.ACCEPTED,
    CrowdAssignment.Status.SUBMITTED,
    CrowdAssignment.Status.APPROVED,
]


@transaction.atomic
def labels_aggregate(*, campaign: CrowdCampaign, min_votes: int = 1) -> AggregateResult:
    """Majority vote per pair over the workers who passed their batch's test questions.

    Answers of workers who failed are kept in CrowdAnswer but not counted. A tie, or fewer than
    `min_votes` counted votes, leaves the pair unresolved: no label is stored (a stale one is removed)
    and the pair is reported so its batch can be given more assignments.
    """
    result = AggregateResult()
    result.discarded_assignments = CrowdAssignment.objects.filter(
        batch__campaign=campaign, passed_tests=False
    ).count()
    votes: dict[int, Counter[bool]] = {}
    counted = CrowdAnswer.objects.filter(
        item__batch__campaign=campaign,
        item__test_question__isnull=True,
        assignment__passed_tests=True,
        assignment__status__in=VOTING_STATUSES,
    ).values_list("item_id", "matched")
    for item_id, matched in counted:
        votes.setdefault(item_id, Counter())[matched] += 1
    judge = campaign.label_judge
    items = BatchItem.objects.filter(batch__campaign=campaign, test_question__isnull=True)
    # Whole rows are read only for the pairs left unresolved; at the study's size (11,600 pairs) labels
    # are written in bulk, so a campaign aggregates in a few queries rather than one per pair.
    labels: list[NtrRow] = []
    unlabelled: list[tuple[int, int]] = []
    unresolved: list[int] = []
    for item_id, response_id, nugget_id in items.order_by("batch__index", "position").values_list(
        "id", "response_id", "nugget_id"
    ):
        tally = votes.get(item_id, Counter())
        total = tally[True] + tally[False]
        if total < min_votes or tally[True] == tally[False]:
            unresolved.append(item_id)
            unlabelled.append((response_id, nugget_id))
            continue
        matched = tally[True] > tally[False]
        result.labelled += 1
        result.yes += matched
        result.no += not matched
        labels.append(NtrRow(response_id=response_id, nugget_id=nugget_id, matched=matched))
    ntr_judgments_upsert(judge=judge, rows=labels, remove=unlabelled)
    by_id = BatchItem.objects.select_related("batch", "response__run", "response__turn", "nugget").in_bulk(
        unresolved
    )
    result.unresolved = [by_id[item_id] for item_id in unresolved]
    return result


def batches_extend(
    *, campaign: CrowdCampaign, items: Iterable[BatchItem], extra: int, client: MTurkClient | None
) -> int:
    """Give the batches of unresolved pairs `extra` more assignments (on MTurk too when published)."""
    batch_ids = sorted({item.batch_id for item in items})
    for batch in CrowdBatch.objects.filter(id__in=batch_ids, campaign=campaign):
        if batch.hit_id and client is not None:
            client.hit_add_assignments(
                hit_id=batch.hit_id,
                count=extra,
                unique_token=f"assay-more-{batch.id}-{batch.max_assignments}",
            )
        with transaction.atomic():
            batch.max_assignments += extra
            batch.save(update_fields=["max_assignments"])
    return len(batch_ids)
