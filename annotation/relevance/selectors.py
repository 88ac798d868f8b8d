"""Reads of the relevance work: the screens of a unit and what is done, per unit and per assignment."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

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

# --- Assessors: the screens of a unit --------------------------------------------------------------


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
    statements = _statement_counts({t.topic_id for t in turns}) if unit.assignment.with_ptkb else {}
    ptkb_answered = _ptkb_answered(judge, unit.turn_pks) if statements else {}
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
