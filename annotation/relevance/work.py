"""Handing a pool's turns to assessors: units of work, redundant copies, expiring leases, progress.

A unit is a turn or a whole conversation of the pool. Each unit has `redundancy` copies (WorkSlot
rows). An assessor asking for work gets, in one transaction, either the copy they already hold (its
lease renewed: that is how they resume) or the first free copy of a unit they have not held. Copies
are claimed under row locks that skip rows another transaction holds (`SELECT ... FOR UPDATE SKIP
LOCKED` on PostgreSQL), so assessors asking at the same instant get different copies without waiting
on each other; on SQLite the settings' IMMEDIATE transactions serialise the claim on the write lock.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from annotation.judgments import relevance_judgment_submit
from annotation.models import (
    Assignment,
    Judge,
    Passage,
    Pool,
    PoolEntry,
    PtkbJudgment,
    PtkbStatement,
    RelevanceJudgment,
    Turn,
    WorkSlot,
    WorkUnit,
)
from annotation.selectors import natural_key


class AssignmentFailed(Exception):
    """The assignment cannot be made as asked."""


# --- Organisers ------------------------------------------------------------------------------------


@transaction.atomic
def assignment_create(
    *,
    pool: Pool,
    name: str,
    assessors: Iterable[User],
    unit_kind: str = Assignment.UnitKind.TURN,
    redundancy: int = 1,
    lease_minutes: int = 60,
    turn_ids: Iterable[str] | None = None,
    with_ptkb: bool = True,
) -> Assignment:
    """Cut a pool's turns (all, or those named) into units and open `redundancy` copies of each."""
    assessors = list(assessors)
    if redundancy < 1:
        raise AssignmentFailed("redundancy must be at least 1")
    if lease_minutes < 1:
        raise AssignmentFailed("a lease lasts at least one minute")
    if not assessors:
        raise AssignmentFailed("name at least one assessor")
    if redundancy > len(assessors):
        raise AssignmentFailed(
            f"redundancy {redundancy} needs at least {redundancy} assessors, got {len(assessors)}"
        )
    if unit_kind not in Assignment.UnitKind.values:
        raise AssignmentFailed(f"unit kind must be one of {', '.join(Assignment.UnitKind.values)}")
    if Assignment.objects.filter(name=name).exists():
        raise AssignmentFailed(f"an assignment named {name!r} already exists")

    pooled = Turn.objects.filter(pool_entries__pool=pool).distinct().select_related("topic")
    turns = sorted(pooled, key=lambda t: (natural_key(t.topic.number), t.position))
    if turn_ids is not None:
        wanted = {t.strip() for t in turn_ids if t.strip()}
        missing = wanted - {t.turn_id for t in turns}
        if missing:
            raise AssignmentFailed(f"turns not in pool {pool.name}: {', '.join(sorted(missing)[:20])}")
        turns = [t for t in turns if t.turn_id in wanted]
    if not turns:
        raise AssignmentFailed(f"pool {pool.name} has no turns to assign")

    assignment = Assignment.objects.create(
        pool=pool,
        name=name,
        unit_kind=unit_kind,
        redundancy=redundancy,
        lease_minutes=lease_minutes,
        with_ptkb=with_ptkb,
    )
    assignment.assessors.set(assessors)
    groups: list[tuple[str, int, list[Turn]]] = []
    if unit_kind == Assignment.UnitKind.TURN:
        groups = [(t.turn_id, t.topic_id, [t]) for t in turns]
    else:
        by_topic: dict[int, list[Turn]] = {}
        for turn in turns:
            by_topic.setdefault(turn.topic_id, []).append(turn)
        groups = [(ts[0].topic.number, topic_pk, ts) for topic_pk, ts in by_topic.items()]
    units = WorkUnit.objects.bulk_create(
        [
            WorkUnit(
                assignment=assignment, topic_id=topic_pk, label=label, turn_pks=[t.pk for t in ts], position=i
            )
            for i, (label, topic_pk, ts) in enumerate(groups)
        ]
    )
    WorkSlot.objects.bulk_create(
        [
            WorkSlot(unit=unit, copy=c, assignment=assignment, position=unit.position)
            for unit in units
            for c in range(redundancy)
        ]
    )
    return assignment


# --- Assessors: leasing work -----------------------------------------------------------------------


def assignments_for_assessor(*, user: User) -> QuerySet[Assignment]:
    return Assignment.objects.filter(assessors=user).select_related("pool", "pool__collection")


def slot_for_assessor(*, user: User, slot_pk: int) -> WorkSlot | None:
    """The copy `slot_pk` if `user` holds it now; a copy taken over after its lease ran out is no longer theirs."""
    return (
        WorkSlot.objects.filter(pk=slot_pk, assessor=user)
        .select_related("unit", "unit__assignment", "unit__assignment__pool", "unit__topic")
        .first()
    )


def held_slot(*, assignment_pk: int, user: User, now: datetime | None = None) -> WorkSlot | None:
    """The open copy `user` holds in an assignment, its lease renewed: resuming costs one query."""
    slot = (
        WorkSlot.objects.filter(unit__assignment_id=assignment_pk, assessor=user, completed_at__isnull=True)
        .select_related("unit", "unit__assignment", "unit__assignment__pool")
        .order_by("position")
        .first()
    )
    if slot is not None:
        _lease_renew(slot, now or timezone.now())
    return slot


def _lease_renew(slot: WorkSlot, now: datetime) -> None:
    # Renewing on every request would write on every page view; half the lease left is plenty.
    lease = timedelta(minutes=slot.unit.assignment.lease_minutes)
    if slot.leased_until is None or slot.leased_until - now < lease / 2:
        slot.leased_until = now + lease
        WorkSlot.objects.filter(pk=slot.pk).update(leased_until=slot.leased_until)


def work_lease(
    *, assignment: Assignment, user: User, now: datetime | None = None
) -> WorkSlot | None:
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


@transaction.atomic
def _work_lease_once(*, assignment: Assignment, user: User, now: datetime) -> WorkSlot | None:
    related = ("unit", "unit__assignment", "unit__assignment__pool", "unit__topic")
    held = (
        WorkSlot.objects.filter(unit__assignment=assignment, assessor=user, completed_at__isnull=True)
        .select_related(*related)
        .order_by("position")
        .first()
    )
    if held is not None:
        _lease_renew(held, now)
        return held
    mine = WorkSlot.objects.filter(unit=OuterRef("unit"), assessor=user)
    free = (
        WorkSlot.objects.filter(assignment=assignment, completed_at__isnull=True)
        .filter(Q(assessor__isnull=True) | Q(leased_until__lt=now))
        .filter(~Exists(mine))
        .order_by("position", "copy")
        .select_related(*related)
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


# --- Assessors: steps and progress -----------------------------------------------------------------


@dataclass
class Step:
    """One screen of a unit: a passage to grade (`index` within its turn) or the turn's PTKB step."""

    turn: Turn
    kind: str  # "passage" or "ptkb"
    index: int = 0
    entry: PoolEntry | None = None
    done: bool = False


@dataclass
class TurnProgress:
    turn: Turn
    judged: int
    to_judge: int
    ptkb_needed: bool
    ptkb_done: bool

    @property
    def complete(self) -> bool:
        return self.judged >= self.to_judge and (self.ptkb_done or not self.ptkb_needed)


@dataclass
class UnitProgress:
    turns: list[TurnProgress] = field(default_factory=list)

    @property
    def judged(self) -> int:
        return sum(t.judged for t in self.turns)

    @property
    def to_judge(self) -> int:
        return sum(t.to_judge for t in self.turns)

    @property
    def complete(self) -> bool:
        return all(t.complete for t in self.turns)


def unit_turns(unit: WorkUnit) -> list[Turn]:
    turns = {t.pk: t for t in Turn.objects.filter(pk__in=unit.turn_pks).select_related("topic")}
    return [turns[pk] for pk in unit.turn_pks if pk in turns]


def unit_steps(*, slot: WorkSlot, judge: Judge) -> list[Step]:
    """Every screen of the unit in order, each marked done when the judge has answered it."""
    unit = slot.unit
    turns = unit_turns(unit)
    entries = list(PoolEntry.objects.filter(pool_id=unit.assignment.pool_id, turn_id__in=unit.turn_pks))
    judged = set(
        RelevanceJudgment.objects.filter(judge=judge, turn_id__in=unit.turn_pks).values_list(
            "turn_id", "passage_id"
        )
    )
    statements = _statement_counts(turns) if unit.assignment.with_ptkb else {}
    ptkb_answered = _ptkb_answered(judge, turns)
    by_turn: dict[int, list[PoolEntry]] = {}
    for entry in sorted(entries, key=lambda e: e.order):
        by_turn.setdefault(entry.turn_id, []).append(entry)
    steps: list[Step] = []
    for turn in turns:
        for index, entry in enumerate(by_turn.get(turn.pk, [])):
            steps.append(Step(turn, "passage", index, entry, (turn.pk, entry.passage_id) in judged))
        if statements.get(turn.topic_id):
            steps.append(Step(turn, "ptkb", done=ptkb_answered.get(turn.pk, 0) >= statements[turn.topic_id]))
    return steps


def _statement_counts(turns: list[Turn]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for topic_pk in PtkbStatement.objects.filter(topic_id__in={t.topic_id for t in turns}).values_list(
        "topic_id", flat=True
    ):
        counts[topic_pk] = counts.get(topic_pk, 0) + 1
    return counts


def _ptkb_answered(judge: Judge, turns: list[Turn]) -> dict[int, int]:
    answered: dict[int, int] = {}
    for turn_pk in PtkbJudgment.objects.filter(judge=judge, turn_id__in=[t.pk for t in turns]).values_list(
        "turn_id", flat=True
    ):
        answered[turn_pk] = answered.get(turn_pk, 0) + 1
    return answered


def unit_progress(*, slot: WorkSlot, judge: Judge) -> UnitProgress:
    """Judged / to judge per turn of the unit, and whether each turn's PTKB step is done."""
    progress: dict[int, TurnProgress] = {}
    for step in unit_steps(slot=slot, judge=judge):
        line = progress.setdefault(step.turn.pk, TurnProgress(step.turn, 0, 0, False, False))
        if step.kind == "passage":
            line.to_judge += 1
            line.judged += step.done
        else:
            line.ptkb_needed, line.ptkb_done = True, step.done
    return UnitProgress(turns=list(progress.values()))


def slot_complete_if_done(*, slot: WorkSlot, judge: Judge, passages_done: bool = False) -> bool:
    """Mark the copy complete once every screen is answered, so it leaves the assessor's open work.

    A caller that has just seen `next_passage_entry` come back empty says so with `passages_done`.
    """
    if slot.completed_at is not None:
        return True
    # One cheap query settles the common case (passages left) before the full walk over the unit.
    if not passages_done and next_passage_entry(slot=slot, judge=judge) is not None:
        return False
    if not all(step.done for step in unit_steps(slot=slot, judge=judge)):
        return False
    slot.completed_at = timezone.now()
    WorkSlot.objects.filter(pk=slot.pk).update(completed_at=slot.completed_at)
    return True


def next_passage_entry(*, slot: WorkSlot, judge: Judge, with_text: bool = False) -> PoolEntry | None:
    """The first pooled passage of the unit this judge has not graded, in one query.

    With `with_text`, the entry carries the passage text as `.text` (None when the collection lacks it).
    """
    judged = RelevanceJudgment.objects.filter(
        judge=judge, turn_id=OuterRef("turn_id"), passage_id=OuterRef("passage_id")
    )
    queryset = (
        PoolEntry.objects.filter(pool_id=slot.unit.assignment.pool_id, turn_id__in=slot.unit.turn_pks)
        .filter(~Exists(judged))
        .select_related("turn")
        .order_by("turn__position", "order")
    )
    if with_text:
        texts = (
            Passage.objects.filter(
                collection_id=slot.unit.assignment.pool.collection_id, passage_id=OuterRef("passage_id")
            )
            .order_by()
            .values("text")[:1]
        )
        queryset = queryset.annotate(text=Subquery(texts))
    return queryset.first()


class PairCheck(enum.Enum):
    """Whether an assessor may grade a (turn, passage) through a copy: the API's 201 / 404 / 400."""

    GRADABLE = "gradable"
    NOT_YOUR_UNIT = "not your unit"
    NOT_POOLED = "not pooled for a turn of your unit"


def pooled_pair_check(*, user: User, slot_pk: int, turn_pk: int, passage_id: str) -> PairCheck:
    """Whether `user` holds copy `slot_pk` and the pair is pooled for a turn of its unit, in one query.

    The copy by primary key and holder (a copy taken over after its lease ran out is no longer theirs),
    the pair by the pool's unique (pool, turn, passage) index in a subquery: a grade is checked with
    one indexed read, and the failure says which check failed.
    """
    entry = PoolEntry.objects.filter(
        pool_id=OuterRef("unit__assignment__pool_id"), turn_id=turn_pk, passage_id=passage_id
    ).order_by()
    row = (
        WorkSlot.objects.filter(pk=slot_pk, assessor=user)
        .values_list("unit__turn_pks", Subquery(entry.values("pk")[:1]))
        .first()
    )
    if row is None:
        return PairCheck.NOT_YOUR_UNIT
    turn_pks, entry_pk = row
    # A pool's other turns may be cut into other units: the pair must be in this copy's unit.
    if entry_pk is None or turn_pk not in turn_pks:
        return PairCheck.NOT_POOLED
    return PairCheck.GRADABLE


# --- PTKB step -------------------------------------------------------------------------------------


@transaction.atomic
def ptkb_judgments_submit(
    *, judge: Judge, turn: Turn, answers: dict[int, bool], time_spent_ms: int | None = None
) -> list[PtkbJudgment]:
    """Record or revise a judge's relevant / not relevant answer for each PTKB statement of the turn.

    `answers` maps statement pks of the turn's conversation to the answer; time spent on the step is
    shared out evenly over its statements and adds up over revisions.
    """
    statements = {s.pk: s for s in PtkbStatement.objects.filter(topic_id=turn.topic_id, pk__in=list(answers))}
    unknown = set(answers) - set(statements)
    if unknown:
        raise AssignmentFailed(f"statements {sorted(unknown)} are not in the PTKB of turn {turn.turn_id}")
    share = None if time_spent_ms is None or not answers else time_spent_ms // len(answers)
    results: list[PtkbJudgment] = []
    for pk, relevant in answers.items():
        judgment, created = PtkbJudgment.objects.select_for_update().get_or_create(
            judge=judge,
            turn=turn,
            statement=statements[pk],
            defaults={"relevant": relevant, "time_spent_ms": share},
        )
        if not created:
            judgment.relevant = relevant
            if share is not None:
                judgment.time_spent_ms = (judgment.time_spent_ms or 0) + share
            judgment.save(update_fields=["relevant", "time_spent_ms", "updated_at"])
        results.append(judgment)
    return results


# --- Organisers: progress --------------------------------------------------------------------------


@dataclass
class AssignmentProgress:
    assignment: Assignment
    units: int
    copies: int
    completed: int
    leased: int
    free: int


def assignment_progress(*, assignment: Assignment, now: datetime | None = None) -> AssignmentProgress:
    now = now or timezone.now()
    slots = WorkSlot.objects.filter(unit__assignment=assignment)
    completed = slots.filter(completed_at__isnull=False).count()
    leased = slots.filter(completed_at__isnull=True, assessor__isnull=False, leased_until__gte=now).count()
    copies = slots.count()
    return AssignmentProgress(
        assignment=assignment,
        units=assignment.units.count(),
        copies=copies,
        completed=completed,
        leased=leased,
        free=copies - completed - leased,
    )


# --- Assessors: answering a screen -----------------------------------------------------------------


def slot_grade_submit(
    *,
    slot: WorkSlot,
    judge: Judge,
    entry: PoolEntry,
    grade: int,
    time_spent_ms: int | None = None,
    close_when_done: bool = True,
) -> RelevanceJudgment:
    """Record or revise the assessor's grade of a pooled passage of their unit, closing the unit when done.

    The grade is written in its own transaction (relevance_judgment_submit) and closing the unit is an
    idempotent second step, so a grade is never lost to a failure in the bookkeeping. Scripted clients
    that close units when they next ask for work (the JSON API) pass `close_when_done=False` to save
    the check on every grade.
    """
    judgment = relevance_judgment_submit(
        judge=judge, turn=entry.turn, passage_id=entry.passage_id, grade=grade, time_spent_ms=time_spent_ms
    )
    if close_when_done:
        slot_complete_if_done(slot=slot, judge=judge)
    return judgment


@transaction.atomic
def slot_ptkb_submit(
    *, slot: WorkSlot, judge: Judge, turn: Turn, answers: dict[int, bool], time_spent_ms: int | None = None
) -> list[PtkbJudgment]:
    """Record or revise the PTKB step of a turn of the assessor's unit, closing the unit when done."""
    judgments = ptkb_judgments_submit(judge=judge, turn=turn, answers=answers, time_spent_ms=time_spent_ms)
    slot_complete_if_done(slot=slot, judge=judge)
    return judgments
