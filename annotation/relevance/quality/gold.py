"""Planting gold: pairs a reference judge graded, placed among the pooled passages of an assignment's units.

A gold pair is shown to the assessor like any pooled passage of the same turn (the next-passage statement
walks both, annotation.relevance.grade_sql), so it is drawn from the unit's own turns: the reference
judge's grades of those turns for passages the pool does not hold. Units whose turns the reference judge
did not grade beyond the pool get none; the others share the rest up to the planned share.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

from annotation.models import Assignment, Judge, PoolEntry, RelevanceJudgment, WorkUnit
from annotation.relevance.quality.models import GoldPair, GoldPlan


@dataclass(frozen=True)
class GoldPlanted:
    asked: int  # gold pairs the share asks for
    planted: int  # gold pairs planted (fewer when the reference judge graded too few spare pairs)
    pooled: int  # pooled pairs of the assignment


def gold_target(pooled: int, share: float) -> int:
    """How many gold pairs make `share` of everything shown, beside `pooled` pairs of the pool."""
    return round(share * pooled / (1 - share))


def gold_plant(
    *, assignment: Assignment, judge: Judge, share: float, rng: random.Random | None = None
) -> GoldPlanted:
    """Record the assignment's gold plan and plant its pairs in its units.

    Each unit is given its share of the gold in proportion to its pooled pairs (largest remainders),
    capped by the spare pairs its turns have; a shortfall moves to units with pairs to spare. Which
    pairs, and where among a turn's passages each goes, is drawn at random, so neither the passage ids
    nor the places follow a pattern an assessor could learn. The caller holds the transaction.
    """
    rng = rng or random.SystemRandom()
    GoldPlan.objects.create(assignment=assignment, judge=judge, share=share)
    units = list(WorkUnit.objects.filter(assignment=assignment).order_by("position"))
    turn_pks = [pk for unit in units for pk in unit.turn_pks]
    orders: dict[int, list[int]] = defaultdict(list)
    pooled_ids: dict[int, set[str]] = defaultdict(set)
    for turn_pk, passage_id, order in PoolEntry.objects.filter(
        pool_id=assignment.pool_id, turn_id__in=turn_pks
    ).values_list("turn_id", "passage_id", "order"):
        orders[turn_pk].append(order)
        pooled_ids[turn_pk].add(passage_id)
    spare: dict[int, list[tuple[int, str, int]]] = defaultdict(list)  # per turn: (turn, passage, grade)
    for turn_pk, passage_id, grade in (
        RelevanceJudgment.objects.filter(judge=judge, turn_id__in=turn_pks)
        .order_by("turn_id", "passage_id")
        .values_list("turn_id", "passage_id", "grade")
    ):
        if passage_id not in pooled_ids[turn_pk]:
            spare[turn_pk].append((turn_pk, passage_id, grade))
    sizes = [sum(len(orders[pk]) for pk in unit.turn_pks) for unit in units]
    room = [sum(len(spare[pk]) for pk in unit.turn_pks) for unit in units]
    asked = gold_target(sum(sizes), share)
    counts = allocate(asked, sizes, room)
    pairs = []
    for unit, count in zip(units, counts, strict=True):
        candidates = [pair for pk in unit.turn_pks for pair in spare[pk]]
        for turn_pk, passage_id, grade in rng.sample(candidates, count):
            places = sorted(orders[turn_pk]) + [max(orders[turn_pk], default=-1) + 1]
            pairs.append(
                GoldPair(
                    unit=unit, turn_id=turn_pk, passage_id=passage_id, order=rng.choice(places), grade=grade
                )
            )
    GoldPair.objects.bulk_create(pairs)
    return GoldPlanted(asked=asked, planted=len(pairs), pooled=sum(sizes))


def allocate(total: int, sizes: list[int], room: list[int]) -> list[int]:
    """`total` split over units in proportion to `sizes` (largest remainders), none above its `room`."""
    counts = [0] * len(sizes)
    left = min(total, sum(room))
    weight = sum(sizes)
    while left > 0 and weight > 0:
        open_units = [i for i in range(len(sizes)) if counts[i] < room[i] and sizes[i] > 0]
        if not open_units:
            break
        weight = sum(sizes[i] for i in open_units)
        quotas = {i: left * sizes[i] / weight for i in open_units}
        given = 0
        for i in open_units:
            extra = min(int(quotas[i]), room[i] - counts[i])
            counts[i] += extra
            given += extra
        by_remainder = sorted(open_units, key=lambda i: (-(quotas[i] - int(quotas[i])), i))
        for i in by_remainder:
            if given >= left:
                break
            if counts[i] < room[i]:
                counts[i] += 1
                given += 1
        left -= given
        if given == 0:
            break
    return counts
