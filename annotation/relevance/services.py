"""Relevance work: the one home of its rules, for the pages, the JSON API and scripts alike.

An organiser cuts a pool's turns into units (a turn or a whole conversation), each with `redundancy`
copies (WorkSlot rows; annotation.relevance.assignments). An assessor then goes through four operations, each with one entry point here:

- `work_lease`: the copy to work on now, the open one they hold (that is how they resume) or the first
  free copy of a unit they have not held;
- `work_next`: the next passage to grade in it, leasing and closing units on the way;
- `work_grade`: record or revise a grade of a pooled passage of a copy they hold;
- `work_close`: mark a copy complete once every screen (passages, PTKB steps) is answered
  (`work_ptkb_submit` answers a PTKB step and closes too).

Only members of an assignment may do any of this: an assessor removed from it can no longer grade or
renew the copy they hold, and the copy is free for the next assessor at once. Copies are claimed under
row locks that skip rows another transaction holds (`SELECT ... FOR UPDATE SKIP LOCKED`), so assessors
asking at the same instant get different copies without waiting on each other.

The hot rules (the next passage, a grade, a grade with the next passage) run as grade_sql's prepared
statements, their one form: a statement costs one round trip where an ORM form of the same rules cost four
queries and grew with the judgments table.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from annotation.models import (
    Assignment,
    Judge,
    PtkbJudgment,
    RelevanceJudgment,
    Turn,
    WorkSlot,
)
from annotation.ptkb.writer import ptkb_judgments_submit
from annotation.relevance.grade_sql import GradeWritten, NextPassage, grade_write, next_of_copy, next_read
from annotation.relevance.quality.models import AssessorPause
from annotation.relevance.selectors import copy_pair_counts, ptkb_steps_done
from annotation.services import judge_for_assessor
from core.remembered import Remembered

# --- Assessors: leasing work -----------------------------------------------------------------------

_Membership = Assignment.assessors.through


def _is_member(user_pk: OuterRef) -> Exists:
    """For a WorkSlot queryset: the user (an OuterRef to a user pk) is still an assessor of its assignment."""
    return Exists(_Membership.objects.filter(assignment_id=OuterRef("assignment_id"), user_id=user_pk))


def assignments_for_assessor(*, user: User) -> QuerySet[Assignment]:
    return Assignment.objects.filter(assessors=user).select_related("pool", "pool__collection")


def slot_for_assessor(*, user: User, slot_pk: int) -> WorkSlot | None:
    """The copy `slot_pk` if `user` holds it now and is still an assessor of its assignment.

    A copy taken over after its lease ran out is no longer theirs.
    """
    return (
        WorkSlot.objects.filter(pk=slot_pk, assessor=user, assignment__assessors=user)
        .select_related("unit", "unit__assignment", "unit__assignment__pool", "unit__topic")
        .first()
    )


def _lease_renew(slot: WorkSlot, now: datetime) -> None:
    renewed = _lease_renew_pk(slot.pk, slot.leased_until, slot.unit.assignment.lease_minutes, now)
    if renewed is not None:
        slot.leased_until = renewed


def _lease_renew_pk(
    slot_pk: int, leased_until: datetime | None, lease_minutes: int, now: datetime
) -> datetime | None:
    """The new end of the copy's lease when it was renewed, else None."""
    # Renewing on every request would write on every request; half the lease left is plenty.
    lease = timedelta(minutes=lease_minutes)
    if leased_until is not None and leased_until - now >= lease / 2:
        return None
    WorkSlot.objects.filter(pk=slot_pk).update(leased_until=now + lease)
    return now + lease


def work_lease(*, assignment: Assignment, user: User, now: datetime | None = None) -> WorkSlot | None:
    """The copy `user` should work on now: the open one they hold, else a newly claimed one, else None.

    The unique (unit, assessor) constraint is the last guard against one assessor holding two copies of
    a unit (two tabs asking at once); such a clash is retried once and then finds the first claim.
    """
    for attempt in range(2):
        try:
            return _work_lease_once(assignment=assignment, user=user, now=now or timezone.now())
        except IntegrityError:
            if attempt:
                raise
    return None


_SLOT_RELATED = ("unit", "unit__assignment", "unit__assignment__pool", "unit__topic")


@transaction.atomic
def _work_lease_once(*, assignment: Assignment, user: User, now: datetime) -> WorkSlot | None:
    held = (
        WorkSlot.objects.filter(assignment=assignment, assessor=user, completed_at__isnull=True)
        .select_related(*_SLOT_RELATED)
        .order_by("position")
        .first()
    )
    if held is not None:
        _lease_renew(held, now)
        return held
    mine = WorkSlot.objects.filter(unit=OuterRef("unit"), assessor=user)
    free = (
        WorkSlot.objects.filter(assignment=assignment, completed_at__isnull=True)
        .filter(Q(assessor__isnull=True) | Q(leased_until__lt=now) | ~_is_member(OuterRef("assessor_id")))
        .filter(~Exists(mine))
        # A paused assessor finishes the copy they hold but claims no new one.
        .filter(
            ~Exists(AssessorPause.objects.filter(user=user, collection__pools=OuterRef("assignment__pool")))
        )
        .order_by("position", "copy")
        .select_related(*_SLOT_RELATED)
        .select_for_update(skip_locked=True, of=("self",))
    )
    slot = free.first()
    if slot is None:
        return None
    slot.assessor = user
    slot.leased_until = now + timedelta(minutes=assignment.lease_minutes)
    slot.started_at = now
    slot.save(update_fields=["assessor", "leased_until", "started_at"])
    return slot


class WorkRefused(Exception):
    """Not a member of the assignment, or not the holder of the copy: the API's and pages' 404."""


class NotPooled(Exception):
    """The pair is not pooled for a turn of the copy's unit: the API's 400."""


# --- Assessors: the next passage -------------------------------------------------------------------


class NextKind(enum.Enum):
    PASSAGE = "passage"  # grade `entry` in `slot`
    PTKB_LEFT = "ptkb left"  # every passage of `slot` is graded, a PTKB step is not
    UNIT_DONE = "unit done"  # the copy asked for is complete (now closed)
    NO_WORK = "no work"  # nothing left in the assignment for this assessor


@dataclass(frozen=True)
class NextStep:
    kind: NextKind
    slot_pk: int | None = None  # the copy, for every kind but NO_WORK
    passage: NextPassage | None = None


def work_next(
    *,
    user: User,
    assignment_pk: int,
    slot_pk: int | None = None,
    now: datetime | None = None,
    check: Remembered | None = None,
) -> NextStep:
    """The next passage for `user` to grade in an assignment, with its text.

    Without `slot_pk` (scripted clients): in the copy they hold, else in a newly leased one; a held copy
    whose screens are all answered is closed on the way and the next one leased. With `slot_pk` (the
    assessor page, which stays on its unit): in that copy only, UNIT_DONE once it is complete.
    One statement in the steady state (the held copy with the membership check and its next passage).
    Raises WorkRefused for a non-member, or a copy they do not hold.
    """
    now = now or timezone.now()
    found = next_read(user_pk=user.pk, assignment_pk=assignment_pk, slot_pk=slot_pk, check=check)
    if found is None and slot_pk is not None:
        raise WorkRefused("no such unit of yours")
    if found is not None and found.completed:
        return NextStep(NextKind.UNIT_DONE, found.slot_pk)
    if found is not None and found.next is not None:
        _lease_renew_pk(found.slot_pk, found.leased_until, found.lease_minutes, now)
        return NextStep(NextKind.PASSAGE, found.slot_pk, found.next)
    # No open copy held, or nothing left to grade in it: close it, lease the next, as below. The statement
    # has just read that they hold no open copy here (a non-member is refused by the lease).
    read_none = slot_pk is None and found is None
    held = WorkSlot.objects.filter(assessor=user, assignment__assessors=user)
    if slot_pk is not None:
        held = held.filter(pk=slot_pk)
        if assignment_pk:
            held = held.filter(assignment_id=assignment_pk)
    else:
        held = held.filter(assignment_id=assignment_pk, completed_at__isnull=True).order_by("position")
    slot = None if read_none else held.select_related("unit", "unit__assignment__pool").first()
    if slot_pk is not None:
        if slot is None:
            raise WorkRefused("no such unit of yours")
        if slot.completed_at is not None:
            return NextStep(NextKind.UNIT_DONE, slot.pk)
    assignment = slot.unit.assignment if slot is not None else None
    while True:
        if slot is None:
            if assignment is None:
                assignment = assignments_for_assessor(user=user).filter(pk=assignment_pk).first()
                if assignment is None:
                    raise WorkRefused("no such assignment of yours")
            slot = work_lease(assignment=assignment, user=user, now=now)
            if slot is None:
                return NextStep(NextKind.NO_WORK)
        else:
            _lease_renew(slot, now)
        passage = _next_slot_passage(slot, user.pk)
        if passage is not None:
            return NextStep(NextKind.PASSAGE, slot.pk, passage)
        if not work_close(slot=slot, judge=judge_for_assessor(user=user), passages_done=True):
            return NextStep(NextKind.PTKB_LEFT, slot.pk)
        if slot_pk is not None:
            return NextStep(NextKind.UNIT_DONE, slot.pk)
        slot = None


def _next_slot_passage(slot: WorkSlot, user_pk: int) -> NextPassage | None:
    return next_of_copy(user_pk=user_pk, slot_pk=slot.pk, label=slot.unit.label)


# --- Assessors: grading, closing, the PTKB step ----------------------------------------------------


@dataclass(frozen=True)
class Graded:
    judgment: RelevanceJudgment
    next: NextStep | None = None  # with `then_next`: what comes next in the same copy


def work_grade(
    *,
    user: User,
    slot_pk: int,
    turn_pk: int,
    passage_id: str,
    grade: int,
    time_spent_ms: int | None = None,
    key: uuid.UUID | None = None,
    then_next: bool = False,
    check: Remembered | None = None,
) -> Graded:
    """Record or revise `user`'s grade of a pooled passage of the copy `slot_pk` they hold.

    `key` names this grade attempt: a client that got no answer (an outage after the commit) retries
    with the same key, and the grade is applied once, its time counted once; the retry's answer is what
    the first attempt's was (the stored grade and time, the same next passage).

    Ownership (holder and member), the pair (pooled for a turn of this unit), the judge, the upsert
    (relevance_upsert_sql, the relevance writer's own statement) and the next passage are one prepared
    statement (grade_sql.grade_write). With `then_next`, the answer carries the copy's next passage as
    `work_next(slot_pk=...)` would give it, saving the assessor page a request per judgment; the copy is
    closed when nothing is left. Without it the copy is not closed here: `work_next` closes it, the page
    calls `work_close` itself. Raises WorkRefused (not your copy) or NotPooled.
    """
    now = timezone.now()

    def write() -> GradeWritten | None:
        return grade_write(
            user_pk=user.pk,
            slot_pk=slot_pk,
            turn_pk=turn_pk,
            passage_id=passage_id,
            grade=grade,
            time_spent_ms=time_spent_ms,
            key=key,
            now=now,
            with_next=then_next,
            check=check,
        )

    written = write()
    if written is not None and written.pooled and written.judge_pk is None:
        # The assessor's first grade: their judge is made, and the statement writes the grade as usual.
        judge_for_assessor(user=user)
        written = write()
    if written is None:
        raise WorkRefused("no such unit of yours")
    # The statement checked the pair against the unit's turns as well, and wrote nothing if it failed.
    if not written.pooled:
        raise NotPooled("this passage is not pooled for a turn of your unit")
    _lease_renew_pk(slot_pk, written.leased_until, written.lease_minutes, now)
    assert written.judge_pk is not None and written.judgment_pk is not None and written.grade is not None
    assert written.created_at is not None and written.updated_at is not None
    judgment = RelevanceJudgment(
        id=written.judgment_pk,
        judge_id=written.judge_pk,
        turn_id=turn_pk,
        passage_id=passage_id,
        grade=written.grade,
        time_spent_ms=written.time_spent_ms,
        created_at=written.created_at,
        updated_at=written.updated_at,
        grade_key=key,
    )
    judgment._state.adding = False
    if not then_next:
        return Graded(judgment)
    return _graded_then(judgment, written.next, user=user, slot_pk=slot_pk, check=check)


def _graded_then(
    judgment: RelevanceJudgment,
    passage: NextPassage | None,
    *,
    user: User,
    slot_pk: int,
    check: Remembered | None = None,
) -> Graded:
    if passage is not None:
        return Graded(judgment, NextStep(NextKind.PASSAGE, slot_pk, passage))
    # Once per copy: the same answer as the next-passage call, which closes the copy when it is done.
    return Graded(judgment, work_next(user=user, assignment_pk=0, slot_pk=slot_pk, check=check))


def work_close(*, slot: WorkSlot, judge: Judge, passages_done: bool = False) -> bool:
    """Mark the copy complete once every screen is answered, so it leaves the assessor's open work.

    Idempotent, and separate from writing a grade so that a grade is never lost to a failure in this
    bookkeeping. A caller that has just seen no passage left says so with `passages_done`.
    """
    if slot.completed_at is not None:
        return True
    if judge.user_id is None:
        raise ValueError(f"judge {judge.name!r} is not an assessor's: only an assessor closes a copy")
    if not passages_done and _next_slot_passage(slot, judge.user_id) is not None:
        return False
    if not ptkb_steps_done(slot=slot, judge=judge):
        return False
    slot.completed_at = timezone.now()
    slot.pairs_shown, slot.pairs_judged = copy_pair_counts(slot=slot, judge=judge)
    WorkSlot.objects.filter(pk=slot.pk).update(
        completed_at=slot.completed_at, pairs_shown=slot.pairs_shown, pairs_judged=slot.pairs_judged
    )
    return True


@transaction.atomic
def work_ptkb_submit(
    *, slot: WorkSlot, judge: Judge, turn: Turn, answers: dict[int, bool], time_spent_ms: int | None = None
) -> list[PtkbJudgment]:
    """Record or revise the PTKB step of a turn of the assessor's copy, closing the copy when done."""
    judgments = ptkb_judgments_submit(judge=judge, turn=turn, answers=answers, time_spent_ms=time_spent_ms)
    work_close(slot=slot, judge=judge)
    return judgments
