"""Reads of the relevance work: the screens of a unit and what is done, per unit and per assignment."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Count, Exists, F, Func, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.utils import timezone

from annotation.models import (
    Assignment,
    Judge,
    PoolEntry,
    PtkbJudgment,
    PtkbStatement,
    RelevanceJudgment,
    Turn,
    WorkSlot,
    WorkUnit,
)
from annotation.relevance.quality.models import GoldPair

# --- Assessors: the screens of a unit --------------------------------------------------------------


@dataclass
class Step:
    """One screen of a unit: a passage to grade (`index` within its turn) or the turn's PTKB step."""

    turn: Turn
    kind: str  # "passage" or "ptkb"
    index: int = 0
    entry: PoolEntry | None = None
    done: bool = False
    grade: int | None = None  # a passage's grade given so far


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


def unit_steps(*, slot: WorkSlot, judge: Judge | None) -> list[Step]:
    """Every screen of the unit in order, each marked done when the judge has answered it.

    `judge` None (an assessor who has graded nothing yet) reads every screen as not done.
    """
    unit = slot.unit
    turns = unit_turns(unit)
    entries = list(PoolEntry.objects.filter(pool_id=unit.assignment.pool_id, turn_id__in=unit.turn_pks))
    # Gold pairs are screens like the others: an unsaved entry each, at its place in the turn's order.
    gold = [
        PoolEntry(
            pool_id=unit.assignment.pool_id, turn_id=turn_pk, passage_id=passage_id, order=order, id=-pk
        )
        for pk, turn_pk, passage_id, order in GoldPair.objects.filter(unit=unit).values_list(
            "pk", "turn_id", "passage_id", "order"
        )
    ]
    grades: dict[tuple[int, str], int] = {}
    if judge is not None:
        given = RelevanceJudgment.objects.filter(judge=judge, turn_id__in=unit.turn_pks)
        grades = {
            (turn_pk, pid): grade
            for turn_pk, pid, grade in given.values_list("turn_id", "passage_id", "grade")
        }
    statements = _statement_counts({t.topic_id for t in turns}) if unit.assignment.with_ptkb else {}
    ptkb_answered = _ptkb_answered(judge, unit.turn_pks) if statements and judge is not None else {}
    by_turn: dict[int, list[PoolEntry]] = {}
    for entry in sorted(entries + gold, key=_presentation):
        by_turn.setdefault(entry.turn_id, []).append(entry)
    steps: list[Step] = []
    for turn in turns:
        for index, entry in enumerate(by_turn.get(turn.pk, [])):
            grade = grades.get((turn.pk, entry.passage_id))
            steps.append(Step(turn, "passage", index, entry, grade is not None, grade))
        if statements.get(turn.topic_id):
            steps.append(Step(turn, "ptkb", done=ptkb_answered.get(turn.pk, 0) >= statements[turn.topic_id]))
    return steps


def _presentation(entry: PoolEntry) -> tuple[int, bool, int]:
    """A turn's screens in the order the next-passage statement walks them: a gold pair (negative id)
    just before the pooled passage of its order."""
    return (entry.order, entry.pk > 0, abs(entry.pk))


def _statement_counts(topic_pks: set[int]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for topic_pk in PtkbStatement.objects.filter(topic_id__in=topic_pks).values_list("topic_id", flat=True):
        counts[topic_pk] = counts.get(topic_pk, 0) + 1
    return counts


def _ptkb_answered(judge: Judge, turn_pks: list[int]) -> dict[int, int]:
    answered: dict[int, int] = {}
    for turn_pk in PtkbJudgment.objects.filter(judge=judge, turn_id__in=turn_pks).values_list(
        "turn_id", flat=True
    ):
        answered[turn_pk] = answered.get(turn_pk, 0) + 1
    return answered


def ptkb_steps_done(*, slot: WorkSlot, judge: Judge) -> bool:
    """Whether every PTKB step of the unit is answered, as `unit_steps` marks them (all of the
    conversation's statements, for each turn); True when the assignment has no PTKB step."""
    unit = slot.unit
    if not unit.assignment.with_ptkb:
        return True
    statements = _statement_counts({unit.topic_id}).get(unit.topic_id, 0)
    if not statements:
        return True
    answered = _ptkb_answered(judge, unit.turn_pks)
    return all(answered.get(turn_pk, 0) >= statements for turn_pk in unit.turn_pks)


def unit_progress(*, slot: WorkSlot, judge: Judge | None) -> UnitProgress:
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


# --- Assessors: the queue page --------------------------------------------------------------------

# Completed units listed turn by turn on the queue page, newest first; the rest are counted.
QUEUE_RECENT_UNITS = 5


@dataclass
class QueueRow:
    """An assignment on the assessor's queue page: what they hold, what is left, and what to offer."""

    assignment: Assignment
    copies: list[tuple[WorkSlot, UnitProgress]]  # their open copy, then the latest completed ones
    open: WorkSlot | None
    state: str  # "in progress", "next unit", "not started", "waiting" or "finished"
    units_done: int
    copies_unlisted: int  # completed copies beyond those listed
    units_free: int
    judged: int
    to_judge: int


def assessor_queue(*, user: User, judge: Judge | None, now: datetime | None = None) -> list[QueueRow]:
    """Each assignment of the assessor with their progress, in a fixed number of queries per assignment.

    Only the open copy and the latest completed ones are read turn by turn; the totals over every copy
    they completed come from the counts each copy kept when it completed (`pairs_shown`,
    `pairs_judged`), so the page costs the same after 600 units as on the first day.
    """
    now = now or timezone.now()
    rows = []
    for assignment in Assignment.objects.filter(assessors=user).select_related(
        "pool", "pool__collection", "gold_plan"
    ):
        mine = WorkSlot.objects.filter(assignment=assignment, assessor=user)
        # The open copy first (no completion time), then the latest completed ones.
        listed = list(
            mine.select_related("unit").order_by(F("completed_at").desc(nulls_first=True), "-pk")[
                : QUEUE_RECENT_UNITS + 1
            ]
        )
        open_slot = next((slot for slot in listed if slot.completed_at is None), None)
        listed = listed[: QUEUE_RECENT_UNITS + (1 if open_slot is not None else 0)]
        kept = mine.aggregate(
            held=Count("pk"),
            done=Count("pk", filter=Q(completed_at__isnull=False)),
            shown=Sum("pairs_shown", filter=Q(completed_at__isnull=False), default=0),
            judged=Sum("pairs_judged", filter=Q(completed_at__isnull=False), default=0),
        )
        turn_pks = [pk for slot in listed for pk in slot.unit.turn_pks]
        counts = _turn_counts(assignment, judge, turn_pks, {slot.unit.topic_id for slot in listed})
        turns = {t.pk: t for t in Turn.objects.filter(pk__in=turn_pks)}
        copies = [(slot, counts.unit(slot.unit, turns)) for slot in listed]
        open_turns = open_slot.unit.turn_pks if open_slot is not None else []
        free, others_hold = _units_left(assignment, user, now)
        if open_slot is not None:
            state = "in progress"
        elif free:
            state = "next unit" if kept["held"] else "not started"
        else:
            state = "waiting" if others_hold else "finished"
        rows.append(
            QueueRow(
                assignment=assignment,
                copies=copies,
                open=open_slot,
                state=state,
                units_done=kept["done"],
                copies_unlisted=max(0, kept["done"] - QUEUE_RECENT_UNITS),
                units_free=free,
                judged=kept["judged"] + sum(counts.judged.get(pk, 0) for pk in open_turns),
                to_judge=kept["shown"] + sum(counts.entries.get(pk, 0) for pk in open_turns),
            )
        )
    return rows


def copy_pair_counts(*, slot: WorkSlot, judge: Judge | None) -> tuple[int, int]:
    """The pairs the copy shows (pooled for its turns, and the assignment's gold pairs of them) and how
    many of them the judge graded, as the queue page counts an open copy: what a copy keeps when it
    completes. One query, since every unit's completion pays it."""
    turn_pks = list(slot.unit.turn_pks)
    pooled = PoolEntry.objects.filter(pool_id=OuterRef("pool_id"), turn_id__in=turn_pks)
    gold = GoldPair.objects.filter(unit__assignment_id=OuterRef("pk"), turn_id__in=turn_pks)
    shown = Q(
        Exists(
            PoolEntry.objects.filter(
                pool_id=OuterRef(OuterRef("pool_id")),
                turn_id=OuterRef("turn_id"),
                passage_id=OuterRef("passage_id"),
            )
        )
    ) | Q(
        Exists(
            GoldPair.objects.filter(
                unit__assignment_id=OuterRef(OuterRef("pk")),
                turn_id=OuterRef("turn_id"),
                passage_id=OuterRef("passage_id"),
            )
        )
    )
    graded = RelevanceJudgment.objects.filter(judge=judge, turn_id__in=turn_pks).filter(shown)
    pairs, planted, judged = (
        Assignment.objects.filter(pk=slot.assignment_id)
        .annotate(
            pairs=_count(pooled),
            planted=_count(gold),
            judged=_count(graded) if judge is not None else Value(0),
        )
        .values_list("pairs", "planted", "judged")
        .get()
    )
    return pairs + planted, judged


def _count(queryset: QuerySet) -> Subquery:
    """A scalar subquery counting the rows of `queryset`."""
    return Subquery(queryset.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n"))


@dataclass
class _TurnCounts:
    entries: dict[int, int]  # pooled pairs per turn
    judged: dict[int, int]  # of those, graded by the judge
    statements: dict[int, int]  # PTKB statements per topic (empty without a PTKB step)
    answered: dict[int, int]  # PTKB answers of the judge per turn

    def unit(self, unit: WorkUnit, turns: dict[int, Turn]) -> UnitProgress:
        """The unit's progress per turn, as unit_progress reads it from the unit's screens."""
        lines = []
        for pk in unit.turn_pks:
            if pk not in turns:
                continue
            needed = self.statements.get(turns[pk].topic_id, 0)
            lines.append(
                TurnProgress(
                    turns[pk],
                    self.judged.get(pk, 0),
                    self.entries.get(pk, 0),
                    needed > 0,
                    needed > 0 and self.answered.get(pk, 0) >= needed,
                )
            )
        return UnitProgress(turns=lines)


def _grouped(queryset: QuerySet, key: str) -> dict[int, int]:
    return dict(queryset.order_by().values(key).annotate(n=Count("pk")).values_list(key, "n"))


def _turn_counts(
    assignment: Assignment, judge: Judge | None, turn_pks: list[int], topic_pks: set[int]
) -> _TurnCounts:
    if not turn_pks:
        return _TurnCounts({}, {}, {}, {})
    entries = _grouped(PoolEntry.objects.filter(pool_id=assignment.pool_id, turn_id__in=turn_pks), "turn_id")
    gold = GoldPair.objects.filter(unit__assignment=assignment, turn_id__in=turn_pks)
    with_gold = _has_gold(assignment)
    if with_gold:
        for turn_pk, n in _grouped(gold, "turn_id").items():
            entries[turn_pk] = entries.get(turn_pk, 0) + n
    judged: dict[int, int] = {}
    answered: dict[int, int] = {}
    statements: dict[int, int] = {}
    if assignment.with_ptkb:
        statements = _grouped(PtkbStatement.objects.filter(topic_id__in=topic_pks), "topic_id")
    if judge is not None:
        pooled = PoolEntry.objects.filter(
            pool_id=assignment.pool_id, turn_id=OuterRef("turn_id"), passage_id=OuterRef("passage_id")
        )
        shown = Q(Exists(pooled))
        if with_gold:
            shown |= Q(Exists(gold.filter(turn_id=OuterRef("turn_id"), passage_id=OuterRef("passage_id"))))
        judged = _grouped(
            RelevanceJudgment.objects.filter(judge=judge, turn_id__in=turn_pks).filter(shown), "turn_id"
        )
        if statements:
            answered = _grouped(PtkbJudgment.objects.filter(judge=judge, turn_id__in=turn_pks), "turn_id")
    return _TurnCounts(entries, judged, statements, answered)


def _has_gold(assignment: Assignment) -> bool:
    try:
        return assignment.gold_plan is not None
    except ObjectDoesNotExist:
        return False


def _units_left(assignment: Assignment, user: User, now: datetime) -> tuple[int, bool]:
    """Open units the user has not held: how many they may take now (free, or leased by someone whose
    lease ran out or who left the assignment, as work_lease decides), and whether any are left at all."""
    not_mine = WorkSlot.objects.filter(assignment=assignment, completed_at__isnull=True).filter(
        ~Exists(WorkSlot.objects.filter(unit=OuterRef("unit"), assessor=user))
    )
    still_member = Exists(
        Assignment.assessors.through.objects.filter(
            assignment_id=OuterRef("assignment_id"), user_id=OuterRef("assessor_id")
        )
    )
    free = (
        not_mine.filter(Q(assessor__isnull=True) | Q(leased_until__lt=now) | ~still_member)
        .values("unit")
        .distinct()
        .count()
    )
    return free, bool(free) or not_mine.exists()


# --- Organisers: progress --------------------------------------------------------------------------


@dataclass
class AssignmentProgress:
    assignment: Assignment
    units: int
    copies: int
    completed: int
    leased: int
    free: int


def assignments_progress(
    *, assignments: list[Assignment], now: datetime | None = None
) -> list[AssignmentProgress]:
    """Each assignment's units and copies: complete, leased now, free. Two grouped queries for any number
    of assignments (four counts per assignment made the organise page grow with every round of work)."""
    now = now or timezone.now()
    ids = [a.pk for a in assignments]
    units = dict(
        WorkUnit.objects.filter(assignment_id__in=ids)
        .values_list("assignment_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    copies = {
        row["assignment_id"]: row
        for row in WorkSlot.objects.filter(assignment_id__in=ids)
        .values("assignment_id")
        .annotate(
            copies=Count("pk"),
            completed=Count("pk", filter=Q(completed_at__isnull=False)),
            leased=Count(
                "pk", filter=Q(completed_at__isnull=True, assessor__isnull=False, leased_until__gte=now)
            ),
        )
        .order_by()
    }
    result = []
    for assignment in assignments:
        row = copies.get(assignment.pk, {"copies": 0, "completed": 0, "leased": 0})
        result.append(
            AssignmentProgress(
                assignment=assignment,
                units=units.get(assignment.pk, 0),
                copies=row["copies"],
                completed=row["completed"],
                leased=row["leased"],
                free=row["copies"] - row["completed"] - row["leased"],
            )
        )
    return result
