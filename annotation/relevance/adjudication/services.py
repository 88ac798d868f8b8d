"""Writes of adjudication: assigning one (the agreed grades and the adjudicator's queue) and grading a
disputed pair. Every grade goes through the relevance writer."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.judge_access import judge_name_refusal
from annotation.models import Collection, Judge, RelevanceJudgment
from annotation.relevance.adjudication.models import Adjudication, AdjudicationItem
from annotation.relevance.adjudication.rules import DisputeRule, Pair, split_pairs
from annotation.relevance.writer import RelevanceRow, relevance_judgment_submit, relevance_judgments_upsert


class AdjudicationRefused(ValueError):
    """The adjudication cannot be assigned as asked; the message says why."""


@dataclass(frozen=True)
class AdjudicationAssigned:
    adjudication: Adjudication
    agreed: int  # pairs written to the judge with their agreed grade
    disputed: int  # pairs put in the adjudicator's queue
    single: int  # pairs only one of the judges graded, left out


def adjudication_refusal(
    *,
    collection: Collection,
    judges: Sequence[Judge],
    adjudicator: User,
    name: str,
    rule: DisputeRule,
) -> str | None:
    """Why the adjudication cannot be assigned (None when it can): the command and the console form
    both ask it, so they refuse the same things with the same words."""
    if len({judge.pk for judge in judges}) < 2:
        return "name at least two different judges whose grades are compared"
    if not 1 <= rule.min_difference <= 4:
        return "the minimum difference is a number of grades from 1 to 4"
    if not 1 <= rule.relevant_from <= 4:
        return "relevant from is a grade from 1 to 4"
    if not adjudicator.is_active:
        return f"{adjudicator.get_username()} is not an active account"
    existing = Judge.objects.filter(name=name).first()
    if existing is not None:
        found = Adjudication.objects.filter(judge=existing).select_related("collection").first()
        if found is not None:
            return (
                f"judge {name!r} is already the adjudication of {found.collection.name}: it is assigned once; "
                "its queue goes on where it is, or choose another name for a new adjudication"
            )
        return f"judge {name!r} exists already: an adjudication writes a new judge, choose another name"
    return judge_name_refusal(name, kind=Judge.Kind.ADJUDICATED, existing=None)


def adjudication_assign(
    *,
    collection: Collection,
    judges: Sequence[Judge],
    adjudicator: User,
    name: str,
    rule: DisputeRule,
    show_grades: bool = False,
    by: User | None = None,
) -> AdjudicationAssigned:
    """Make judge `name`: the grades `judges` agree on, written now, and a queue for `adjudicator` of
    the pairs they dispute, whose grades are written as the adjudicator gives them.

    Only pairs two or more of the judges graded count (grades of planted gold pairs left out): disputed
    ones by `rule`, the others agreed with their lower median (rules.agreed_grade). Assigned once per
    name: asked again it is refused (AdjudicationRefused), so a repeated command changes nothing.
    """
    refusal = adjudication_refusal(
        collection=collection, judges=judges, adjudicator=adjudicator, name=name, rule=rule
    )
    if refusal:
        raise AdjudicationRefused(refusal)
    by_pair: dict[Pair, list[int]] = defaultdict(list)
    for turn_pk, passage_id, grade in RelevanceJudgment.objects.filter(
        judge__in=list(judges), turn__collection=collection, gold_grade__isnull=True
    ).values_list("turn_id", "passage_id", "grade"):
        by_pair[(turn_pk, passage_id)].append(grade)
    split = split_pairs(by_pair, rule)
    names = ", ".join(sorted(judge.name for judge in judges))
    with transaction.atomic():
        judge = Judge.objects.create(
            name=name,
            kind=Judge.Kind.ADJUDICATED,
            description=f"Adjudication of {names} on {collection.name} by {adjudicator.get_username()}",
        )
        adjudication = Adjudication.objects.create(
            collection=collection,
            judge=judge,
            adjudicator=adjudicator,
            min_difference=rule.min_difference,
            across_threshold=rule.across_threshold,
            relevant_from=rule.relevant_from,
            show_grades=show_grades,
            created_by=by,
        )
        adjudication.sources.set(judges)
        AdjudicationItem.objects.bulk_create(
            AdjudicationItem(adjudication=adjudication, turn_id=turn_pk, passage_id=passage_id)
            for turn_pk, passage_id in split.disputed
        )
        relevance_judgments_upsert(
            judge=judge,
            collection=collection,
            rows=[
                RelevanceRow(turn_pk, passage_id, grade)
                for (turn_pk, passage_id), grade in split.agreed.items()
            ],
        )
    return AdjudicationAssigned(adjudication, len(split.agreed), len(split.disputed), split.single)


def adjudication_grade(
    *, item: AdjudicationItem, grade: int, time_spent_ms: int | None = None, key: uuid.UUID | None = None
) -> RelevanceJudgment:
    """Record (or revise) the adjudicator's grade of a disputed pair as the adjudication's judge's."""
    with transaction.atomic():
        judgment = relevance_judgment_submit(
            judge=item.adjudication.judge_id,
            turn=item.turn_id,
            passage_id=item.passage_id,
            grade=grade,
            time_spent_ms=time_spent_ms,
            key=key,
        )
        if item.graded_at is None:
            item.graded_at = timezone.now()
            item.save(update_fields=["graded_at"])
    return judgment
