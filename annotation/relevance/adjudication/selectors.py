"""Reads of adjudication: an adjudicator's queue, each reached through its adjudicator, and what the
adjudication page shows of a disputed pair."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet

from annotation.models import Judge, RelevanceJudgment
from annotation.relevance.adjudication.models import Adjudication, AdjudicationItem


def adjudications_for_adjudicator(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Adjudication]:
    """The user's adjudications with their pairs (`total`) and those graded (`graded`), newest first."""
    return (
        Adjudication.objects.filter(adjudicator_id=user.pk)
        .select_related("collection", "judge")
        .annotate(total=Count("items"), graded=Count("items", filter=Q(items__graded_at__isnull=False)))
        .order_by("-created_at", "-pk")
    )


def adjudication_for_adjudicator(*, user: AbstractBaseUser | AnonymousUser, pk: int) -> Adjudication | None:
    """The adjudication `pk` when `user` is its adjudicator, else None (a 404 for the pages)."""
    return (
        Adjudication.objects.select_related("collection", "judge")
        .filter(pk=pk, adjudicator_id=user.pk)
        .first()
    )


def adjudication_next_item(
    *, adjudication: Adjudication, after: AdjudicationItem | None = None
) -> AdjudicationItem | None:
    """The first pair not graded yet after `after` in queue order, else the first anywhere, else None."""
    waiting = adjudication.items.filter(graded_at__isnull=True).order_by("turn_id", "passage_id")
    if after is not None:
        later = waiting.filter(
            Q(turn_id__gt=after.turn_id) | Q(turn_id=after.turn_id, passage_id__gt=after.passage_id)
        )
        found = later.first()
        if found is not None:
            return found
    return waiting.first()


@dataclass(frozen=True)
class EarlierGrade:
    judge: str
    grade: int


def earlier_grades(*, adjudication: Adjudication, item: AdjudicationItem) -> list[EarlierGrade]:
    """The grades the adjudication's judges gave the pair (gold grades left out), by judge name."""
    rows = (
        RelevanceJudgment.objects.filter(
            judge__in=Judge.objects.filter(adjudicated_in=adjudication),
            turn_id=item.turn_id,
            passage_id=item.passage_id,
            gold_grade__isnull=True,
        )
        .order_by("judge__name")
        .values_list("judge__name", "grade")
    )
    return [EarlierGrade(name, grade) for name, grade in rows]


def adjudicated_grade(*, item: AdjudicationItem) -> int | None:
    """The adjudicator's grade of the pair, None before they gave one."""
    return (
        RelevanceJudgment.objects.filter(
            judge_id=item.adjudication.judge_id, turn_id=item.turn_id, passage_id=item.passage_id
        )
        .values_list("grade", flat=True)
        .first()
    )
