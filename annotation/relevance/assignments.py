"""Handing out relevance work: an organiser cuts a pool's turns into units and opens copies of each.

The assessors' side (leasing those copies, grading, closing) is annotation.relevance.services.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import Assignment, Judge, Pool, Turn, WorkSlot, WorkUnit
from annotation.relevance.quality.gold import gold_plant
from core.ordering import natural_key
from core.wording import plural


class AssignmentFailed(Exception):
    """The assignment cannot be made as asked."""


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
    gold_judge: Judge | None = None,
    gold_share: float | None = None,
) -> Assignment:
    """Cut a pool's turns (all, or those named) into units and open `redundancy` copies of each.

    With `gold_judge`, pairs that judge graded are planted among the units' passages at `gold_share`
    of what the assessors see (annotation.relevance.quality.gold)."""
    assessors = list(assessors)
    if redundancy < 1:
        raise AssignmentFailed("redundancy must be at least 1")
    if lease_minutes < 1:
        raise AssignmentFailed("a lease lasts at least one minute")
    if not assessors:
        raise AssignmentFailed("name at least one assessor")
    if redundancy > len(assessors):
        raise AssignmentFailed(
            f"redundancy {redundancy} needs at least {plural(redundancy, 'assessor')}, got {len(assessors)}"
        )
    if unit_kind not in Assignment.UnitKind.values:
        raise AssignmentFailed(f"unit kind must be one of {', '.join(Assignment.UnitKind.values)}")
    if (gold_judge is None) != (gold_share is None):
        raise AssignmentFailed("gold needs both a reference judge and a share")
    if gold_share is not None and not 0 < gold_share <= 0.5:
        raise AssignmentFailed("the gold share is above 0 and at most 0.5")
    if gold_judge is not None and gold_judge.user_id in {user.pk for user in assessors}:
        # Their own grades would be the answers: their gold pairs would read as already graded.
        raise AssignmentFailed(
            f"judge {gold_judge.name} is an assessor of this assignment: choose another reference"
        )
    if Assignment.objects.filter(name=name).exists():
        raise AssignmentFailed(f"an assignment named {name!r} already exists")

    pooled = Turn.objects.filter(pool_entries__pool=pool).distinct().select_related("topic")
    turns = sorted(pooled, key=lambda t: (natural_key(t.topic.number), t.position))
    if turn_ids is not None:
        wanted = {t.strip() for t in turn_ids if t.strip()}
        missing = wanted - {t.turn_id for t in turns}
        if missing:
            raise AssignmentFailed(
                f"turns not in pool {pool.name}: {', '.join(sorted(missing, key=natural_key)[:20])}"
            )
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
    if gold_judge is not None and gold_share is not None:
        planted = gold_plant(assignment=assignment, judge=gold_judge, share=gold_share)
        if planted.planted == 0:
            raise AssignmentFailed(
                f"judge {gold_judge.name} graded no pair of these turns outside pool {pool.name}: no gold to plant"
            )
    return assignment
