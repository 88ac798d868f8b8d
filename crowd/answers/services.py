"""Taking crowd answers: in-platform submissions, provisional answers from the MTurk HIT page, and
assignments confirmed by MTurk (sync, results CSV).

Every path locks the batch row first (SELECT ... FOR UPDATE), so the batch's places are counted and a
worker's one assignment is looked up by one writer at a time: concurrent submits never overfill a batch,
and a repeated submit is answered as a repeat.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.judge_access import ImportJudgeRefused
from annotation.models import Condition, Judge, NuggetSupport
from annotation.nuggets.writer import NtrRow, ntr_judgments_upsert
from annotation.rag_nuggets.writer import AssignmentRow, nugget_assignments_upsert
from annotation.services import judge_get_or_create
from crowd.campaigns.models import WORKER_JUDGE_PREFIX
from crowd.errors import CrowdError
from crowd.models import (
    VOTING_STATUSES,
    BatchItem,
    CrowdAnswer,
    CrowdAssignment,
    CrowdBatch,
    CrowdCampaign,
    CrowdWorker,
)

# A worker's answer to one question: yes / no in a nugget-matching campaign, a NuggetSupport value in a
# nugget-support one (answers_from_fields parses by the campaign's kind).
Answer = bool | str


class AssignmentRepeated(CrowdError):
    """The worker (or assignment id) already has a confirmed answer to this batch: a repeat, not a fault."""


class BatchFull(CrowdError):
    """The batch has as many confirmed assignments as it asked for."""


class ProvisionalCapReached(CrowdError):
    """The HIT holds as many unconfirmed answers as its real workers could have posted, and more."""


# Unconfirmed rows a HIT keeps per place (MaxAssignments). A HIT never has more real assignments than
# its places; a place is offered again only when its worker returns or abandons the HIT, and few of those
# post to the page first. Three per place leaves room for two such re-offers of every place; anything
# beyond is made-up ids. Per workerId there is already at most one row per HIT (a later post replaces it),
# so a forger's rows in a campaign stay under (batches x places x 3) whatever ids they invent.
PROVISIONAL_PER_PLACE = 3


def worker_get_or_create(*, worker_id: str, user: Any = None) -> CrowdWorker:
    worker, _ = CrowdWorker.objects.get_or_create(worker_id=worker_id, defaults={"user": user})
    return worker


def worker_for_user(*, user: Any) -> CrowdWorker:
    worker = CrowdWorker.objects.filter(user=user).first()
    return worker or worker_get_or_create(worker_id=f"user:{user.get_username()}", user=user)


def _batch_locked(batch: CrowdBatch) -> CrowdBatch:
    return CrowdBatch.objects.select_for_update().select_related("campaign").get(id=batch.id)


def _items_checked(batch: CrowdBatch, answers: Mapping[int, Answer]) -> dict[int, BatchItem]:
    items = {item.position: item for item in batch.items.select_related("test_question")}
    if set(answers) != set(items):
        missing = sorted(set(items) - set(answers))
        extra = sorted(set(answers) - set(items))
        raise CrowdError(
            f"answers must cover positions 1..{len(items)}"
            + (f"; missing {[p + 1 for p in missing]}" if missing else "")
            + (f"; unknown {[p + 1 for p in extra]}" if extra else "")
        )
    return items


def _check_room(batch: CrowdBatch) -> None:
    if CrowdAssignment.objects.filter(batch=batch).voting().count() >= batch.max_assignments:
        raise BatchFull(f"This batch has all the answers it needs ({batch.max_assignments}).")


def _answers_store(
    *,
    assignment: CrowdAssignment,
    items: Mapping[int, BatchItem],
    answers: Mapping[int, Answer],
    times_ms: Mapping[int, int],
) -> None:
    stored = {a.item_id: a for a in assignment.answers.all()}
    created: list[CrowdAnswer] = []
    for position, given in answers.items():
        item = items[position]
        ms = times_ms.get(position)
        support = given if isinstance(given, str) else ""
        matched = given != NuggetSupport.NONE if isinstance(given, str) else given
        answer = stored.get(item.id)
        if answer is None:
            created.append(
                CrowdAnswer(
                    assignment=assignment, item=item, matched=matched, support=support, time_spent_ms=ms
                )
            )
        elif (answer.matched, answer.support) != (matched, support) or (
            ms is not None and answer.time_spent_ms != ms
        ):
            answer.matched, answer.support = matched, support
            answer.time_spent_ms = ms if ms is not None else answer.time_spent_ms
            answer.save(update_fields=["matched", "support", "time_spent_ms"])
    CrowdAnswer.objects.bulk_create(created)


def _passed(items: Mapping[int, BatchItem], answers: Mapping[int, Answer]) -> bool:
    return all(
        answers[p] == (item.test_question.support or item.test_question.answer)
        for p, item in items.items()
        if item.test_question is not None
    )


@transaction.atomic
def assignment_submit(
    *,
    batch: CrowdBatch,
    worker: CrowdWorker,
    answers: Mapping[int, Answer],
    times_ms: Mapping[int, int] | None = None,
    assignment_id: str = "",
    status: str = CrowdAssignment.Status.SUBMITTED,
    accept_time: datetime | None = None,
    submit_time: datetime | None = None,
) -> CrowdAssignment:
    """Store one worker's confirmed answers to a batch (keyed by 0-based position) and score its tests.

    Confirmed means the worker is known to be who they say: an account, a signed link, or MTurk itself
    (sync, results CSV), which gives the `assignment_id`. Without an id a second submit by the worker is
    refused as AssignmentRepeated; with the same id the answers are stored again (a repeated sync adds no
    rows). A provisional row from the HIT page under the same assignment id or the same worker gives way
    to the confirmed one, whoever posted it. A new assignment needs a free place in the batch (BatchFull).
    """
    batch = _batch_locked(batch)
    items = _items_checked(batch, answers)
    if worker.blocked:
        raise CrowdError("this worker is blocked")
    times_ms = times_ms or {}
    mine = CrowdAssignment.objects.filter(batch=batch, worker=worker).first()
    same_id = CrowdAssignment.objects.filter(assignment_id=assignment_id).first() if assignment_id else None
    if same_id is not None and same_id.batch_id != batch.id:
        raise CrowdError(f"assignment id {assignment_id} belongs to another batch")
    if same_id is not None and same_id.worker_id != worker.id and not same_id.is_provisional:
        raise CrowdError(f"assignment id {assignment_id} belongs to another worker")
    if mine is not None and mine != same_id:
        if not mine.is_provisional:
            if not assignment_id:
                raise AssignmentRepeated("You have already answered this batch.")
            raise CrowdError(f"worker {worker.worker_id} already answered this batch")
        # A provisional row under this worker's id but another assignment id: forged, or an earlier
        # accept the worker returned. Either way it is not what MTurk (or the worker) confirms now.
        mine.delete()
    assignment = same_id
    if assignment is not None and assignment.worker_id != worker.id:
        # Someone posted this assignment id under another worker id; MTurk says whose it is.
        assignment.delete()
        assignment = None
    if (assignment is None or assignment.is_provisional) and status in VOTING_STATUSES:
        _check_room(batch)
    passed = _passed(items, answers)
    if assignment is None:
        assignment = CrowdAssignment.objects.create(
            batch=batch,
            worker=worker,
            assignment_id=assignment_id or f"local-{uuid.uuid4().hex}",
            status=status,
            accept_time=accept_time,
            submit_time=submit_time or timezone.now(),
            passed_tests=passed,
        )
    else:
        # A status decided by review (Approved/Rejected) is not walked back by a later sync.
        if assignment.status in {CrowdAssignment.Status.ACCEPTED, CrowdAssignment.Status.SUBMITTED}:
            assignment.status = status
        assignment.accept_time = accept_time or assignment.accept_time
        assignment.submit_time = submit_time or assignment.submit_time
        assignment.passed_tests = passed
        assignment.save()
    _answers_store(assignment=assignment, items=items, answers=answers, times_ms=times_ms)
    if not assignment.is_provisional:
        _worker_votes_store(batch=batch, worker=worker, items=items, answers=answers, times_ms=times_ms)
    return assignment


@transaction.atomic
def assignment_provisional_store(
    *,
    batch: CrowdBatch,
    worker_id: str,
    assignment_id: str,
    answers: Mapping[int, Answer],
    times_ms: Mapping[int, int] | None = None,
) -> CrowdAssignment:
    """Keep answers posted to the MTurk HIT page until MTurk confirms them (`mturk_sync`).

    The page cannot tell a worker from someone posting made-up assignment and worker ids, so these rows
    never vote and take no place of the batch. The latest post for an unconfirmed assignment id or
    worker id replaces the earlier one, so a forged post cannot keep the real worker from answering; a
    confirmed one is not touched (AssignmentRepeated), and a full batch takes no more (BatchFull).
    New rows stop at PROVISIONAL_PER_PLACE per place of the batch (ProvisionalCapReached), so made-up ids
    cannot grow the table without bound; MTurk still has a real worker's answers, and `mturk_sync` stores
    them from there.
    """
    if not assignment_id or not worker_id:
        raise CrowdError("an MTurk answer needs its assignmentId and workerId")
    batch = _batch_locked(batch)
    items = _items_checked(batch, answers)
    worker = worker_get_or_create(worker_id=worker_id)
    if worker.blocked:
        raise CrowdError("this worker is blocked")
    earlier = list(
        CrowdAssignment.objects.filter(batch=batch, worker=worker)
        | CrowdAssignment.objects.filter(assignment_id=assignment_id)
    )
    for row in earlier:
        if not row.is_provisional:
            raise AssignmentRepeated("This assignment is already submitted.")
        if row.batch_id != batch.id:
            raise CrowdError(f"assignment id {assignment_id} belongs to another batch")
    _check_room(batch)
    replaced = [row.id for row in earlier]
    cap = PROVISIONAL_PER_PLACE * batch.max_assignments
    if CrowdAssignment.objects.filter(batch=batch).provisional().exclude(id__in=replaced).count() >= cap:
        raise ProvisionalCapReached(
            f"This HIT already holds {cap} answers that MTurk has not confirmed; no more are kept here."
        )
    CrowdAssignment.objects.filter(id__in=replaced).delete()
    assignment = CrowdAssignment.objects.create(
        batch=batch,
        worker=worker,
        assignment_id=assignment_id,
        status=CrowdAssignment.Status.ACCEPTED,
        submit_time=timezone.now(),
        passed_tests=_passed(items, answers),
    )
    _answers_store(assignment=assignment, items=items, answers=answers, times_ms=times_ms or {})
    return assignment


def assignment_confirm(
    *,
    batch: CrowdBatch,
    worker_id: str,
    assignment_id: str,
    answers: Mapping[int, Answer],
    times_ms: Mapping[int, int] | None = None,
    status: str = CrowdAssignment.Status.SUBMITTED,
    accept_time: datetime | None = None,
    submit_time: datetime | None = None,
) -> CrowdAssignment:
    """An assignment as MTurk reports it (ListAssignmentsForHIT, results CSV): confirmed from now on."""
    if status == CrowdAssignment.Status.ACCEPTED:
        raise CrowdError(f"assignment {assignment_id} is not submitted on MTurk yet")
    return assignment_submit(
        batch=batch,
        worker=worker_get_or_create(worker_id=worker_id),
        answers=answers,
        times_ms=times_ms,
        assignment_id=assignment_id,
        status=status,
        accept_time=accept_time,
        submit_time=submit_time,
    )


def worker_judge_name(*, worker: CrowdWorker, provider: str) -> str:
    return f"{WORKER_JUDGE_PREFIX.get(provider, 'crowd-worker')}:{worker.worker_id}"


def worker_judge_get_or_create(*, worker: CrowdWorker, provider: str) -> Judge:
    """The crowd judge whose NtR labels are one worker's raw votes, named after the worker."""
    name = worker_judge_name(worker=worker, provider=provider)
    try:
        judge = judge_get_or_create(
            name=name,
            kind=Judge.Kind.CROWD,
            description="Raw votes of one crowd worker, test questions and failed assignments included.",
        )
    except ImportJudgeRefused as exc:
        raise CrowdError(str(exc)) from None
    if judge.kind != Judge.Kind.CROWD:
        raise CrowdError(f"judge {name!r} exists and is not a crowd judge")
    return judge


def _worker_votes_store(
    *,
    batch: CrowdBatch,
    worker: CrowdWorker,
    items: Mapping[int, BatchItem],
    answers: Mapping[int, Answer],
    times_ms: Mapping[int, int],
) -> None:
    # Each worker's votes are also NtR judgments of their own judge, so the agreement capability can
    # compare workers with each other and with machine judges on the pairs they share. All votes are
    # kept, those of workers who failed a test question too: who counts is the majority vote's business.
    judge = worker_judge_get_or_create(worker=worker, provider=batch.campaign.provider)
    votes: dict[tuple[int, int], tuple[Answer, int | None]] = {}
    for p, given in answers.items():
        item = items[p]
        # A pair has both ids and a test question neither (crowd_item_pair_or_test): tests are skipped.
        if item.response_id is not None and item.nugget_id is not None:
            votes[(item.response_id, item.nugget_id)] = (given, times_ms.get(p))
    if not votes:
        return
    if batch.campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT:
        # Workers are shown no machine label: their three-way answers are labels from scratch.
        nugget_assignments_upsert(
            judge=judge,
            collection=batch.campaign.collection,
            rows=[
                AssignmentRow(response_id=r, nugget_id=n, label=str(given))
                for (r, n), (given, _) in votes.items()
            ],
            condition=Condition.SCRATCH,
        )
        return
    ntr_judgments_upsert(
        judge=judge,
        rows=[
            NtrRow(response_id=response_id, nugget_id=nugget_id, matched=bool(matched), time_spent_ms=ms)
            for (response_id, nugget_id), (matched, ms) in votes.items()
        ],
    )


# A day, as on the assessor pages: a longer time is a tab left open, not time spent answering.
MAX_ANSWER_MS = 86_400_000


YES = {"yes", "y", "1", "true"}
NO = {"no", "n", "0", "false"}


# A nugget-support answer by its value or the worker page's key (s / p / n).
SUPPORT_ANSWERS = {
    **{value: value for value in NuggetSupport.values},
    "s": NuggetSupport.SUPPORT.value,
    "p": NuggetSupport.PARTIAL.value,
    "partial": NuggetSupport.PARTIAL.value,
    "n": NuggetSupport.NONE.value,
}


def parse_vote(value: str) -> bool:
    text = value.strip().lower()
    if text in YES:
        return True
    if text in NO:
        return False
    raise CrowdError(f"answer must be yes or no, not {value!r}")


def parse_support(value: str) -> str:
    text = value.strip().lower()
    if text in SUPPORT_ANSWERS:
        return SUPPORT_ANSWERS[text]
    raise CrowdError(f"answer must be one of {', '.join(NuggetSupport.values)}, not {value!r}")


def answers_from_fields(
    fields: Mapping[str, str], *, size: int, kind: str = CrowdCampaign.Kind.NTR
) -> tuple[dict[int, Answer], dict[int, int]]:
    """Answers named q1..qN (yes/no, or support/partial_support/not_support in a campaign of that `kind`)
    and optional ms1..msN (milliseconds), as the worker page posts them, MTurk returns them and its results
    CSV holds them.

    A time is optional, but one that is sent and is not 0 to a day of milliseconds (`inf`, `nan`, `1e30`,
    `-1`) is not what the page sends: it is refused (CrowdError) on every path, the pages, `mturk_sync`
    and the results CSV alike, rather than stored or clamped.
    """
    answers: dict[int, Answer] = {}
    times: dict[int, int] = {}
    parse = parse_support if kind == CrowdCampaign.Kind.NUGGET_SUPPORT else parse_vote
    for n in range(1, size + 1):
        value = fields.get(f"q{n}")
        if value is None or value == "":
            raise CrowdError(f"question {n} has no answer")
        answers[n - 1] = parse(value)
        ms = fields.get(f"ms{n}")
        if ms:
            try:
                spent = float(ms)
            except ValueError:
                spent = math.nan
            if not 0 <= spent <= MAX_ANSWER_MS:  # NaN compares False
                raise CrowdError(f"ms{n} must be a number of milliseconds from 0 to {MAX_ANSWER_MS}")
            times[n - 1] = int(spent)
    return answers, times
