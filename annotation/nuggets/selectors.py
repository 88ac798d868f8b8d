"""Reads for the nugget pages: relevant passages, judges to choose from, counts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import Count, Q, QuerySet, Sum

from annotation.formats.base import excerpt
from annotation.judge_access import NOT_SHARED, judge_readable
from annotation.models import (
    Collection,
    Judge,
    Nugget,
    NuggetTurnCount,
    Passage,
    RelevanceJudgment,
    Turn,
)

# --- Selectors -------------------------------------------------------------------------------------


@dataclass
class RelevantPassage:
    passage_id: str
    grade: int
    text: str | None  # None when the collection does not hold the passage's text
    title: str = ""


def relevant_passages(*, turn: Turn, relevance_judge: Judge, min_grade: int) -> list[RelevantPassage]:
    """The turn's passages graded at least `min_grade` by the judge, most relevant first."""
    grades = list(
        RelevanceJudgment.objects.filter(judge=relevance_judge, turn=turn, grade__gte=min_grade).values_list(
            "passage_id", "grade"
        )
    )
    texts = {
        p.passage_id: p
        for p in Passage.objects.filter(
            collection_id=turn.collection_id, passage_id__in=[pid for pid, _ in grades]
        )
    }
    grades.sort(key=lambda row: (-row[1], row[0]))
    return [
        RelevantPassage(
            passage_id=pid,
            grade=grade,
            text=texts[pid].text if pid in texts else None,
            title=texts[pid].title if pid in texts else "",
        )
        for pid, grade in grades
    ]


def relevance_judge_chosen(*, user: AbstractBaseUser | AnonymousUser, value: object) -> Judge | None:
    """The relevance judge named by id in a request (None when it names none), if `user` may read its grades.

    A judge the user may not read is PermissionDenied with the rule (a page or a JSON answer says why); an
    id that names no judge is BadRequest. Checked on every request that names one, pages and posts alike.
    """
    if value in (None, ""):
        return None
    try:
        judge = Judge.objects.filter(pk=int(str(value))).first()
    except (TypeError, ValueError):
        judge = None
    if judge is None:
        raise BadRequest(f"no relevance judge {excerpt(value, 20)}")
    if not judge_readable(user=user, judge=judge):
        raise PermissionDenied(f"You may not read the grades of judge {judge.pk}: {NOT_SHARED}.")
    return judge


def nugget_payload(nugget: Nugget) -> dict:
    return {
        "id": nugget.pk,
        "key": nugget.key,
        "text": nugget.text,
        "passage_id": nugget.passage_id,
        "start": nugget.start,
        "end": nugget.end,
        "relevance": nugget.relevance,
        "duplicate_of": nugget.duplicate_of_id,
    }


@dataclass
class TurnCounts:
    turn_id: str
    nuggets: int = 0
    deduplicated: int = 0
    words: int = 0

    @property
    def mean_words(self) -> float:
        return self.words / self.nuggets if self.nuggets else 0.0


@dataclass
class NuggetStats:
    """A nugget set's figures in all: the turns it covers or has nuggets on, its nuggets, those that
    survive de-duplication, their words; `derived` when a de-duplicated set was derived from it."""

    judge: Judge
    n_turns: int = 0
    nuggets: int = 0
    deduplicated: int = 0
    words: int = 0
    derived: bool = False

    @property
    def mean_words(self) -> float:
        return self.words / self.nuggets if self.nuggets else 0.0

    @property
    def mean_per_turn(self) -> float:
        return self.nuggets / self.n_turns if self.n_turns else 0.0

    @property
    def mean_deduplicated_per_turn(self) -> float:
        return self.deduplicated / self.n_turns if self.n_turns else 0.0


# The (judge, turn) rows of a set: a turn the set lists, or one it has nuggets on. A row at zero
# (nuggets since deleted, a turn no longer listed) is kept by PostgreSQL and counts for nothing.
_IN_SET = Q(covered=True) | Q(nuggets__gt=0)


def nugget_set_stats(*, collection: Collection, judges: Iterable[Judge]) -> list[NuggetStats]:
    """Each judge's nugget set in the collection, in all, from the counts PostgreSQL keeps per judge and turn
    (annotation/nuggets/counts.py): one grouped query whatever the number of sets and nuggets.

    A nugget survives de-duplication when it is not marked as a duplicate and, if a de-duplicated set
    was derived from this one (another judge's nuggets whose `original` is here), when that set kept it.
    """
    judges = list(judges)
    totals = {
        row["judge_id"]: row
        for row in NuggetTurnCount.objects.filter(collection=collection, judge__in=judges)
        .filter(_IN_SET)
        .values("judge_id")
        .annotate(
            n_turns=Count("pk"),
            nuggets=Sum("nuggets"),
            words=Sum("words"),
            unmarked=Sum("unmarked"),
            derived=Sum("derived"),
            derived_unmarked=Sum("derived_unmarked"),
        )
        .order_by()
    }
    stats = []
    for judge in judges:
        row = totals.get(judge.pk)
        if row is None:
            stats.append(NuggetStats(judge=judge))
            continue
        derived = row["derived"] > 0
        stats.append(
            NuggetStats(
                judge=judge,
                n_turns=row["n_turns"],
                nuggets=row["nuggets"],
                deduplicated=row["derived_unmarked"] if derived else row["unmarked"],
                words=row["words"],
                derived=derived,
            )
        )
    return stats


def nugget_turn_rows(*, collection: Collection, judge: Judge) -> QuerySet[NuggetTurnCount]:
    """A set's counts turn by turn, turns in reading order, for a page to read a page of
    (`nugget_turn_counts` makes them rows)."""
    return (
        NuggetTurnCount.objects.filter(collection=collection, judge=judge)
        .filter(_IN_SET)
        .select_related("turn")
        .only(*(f.name for f in NuggetTurnCount._meta.concrete_fields), "turn__turn_id")
        .order_by("turn__reading_order", "turn_id")
    )


def nugget_turn_counts(rows: Iterable[NuggetTurnCount], *, stats: NuggetStats) -> list[TurnCounts]:
    """Rows of `nugget_turn_rows` as a set's per-turn figures; `stats` (the set's, from `nugget_set_stats`)
    says whether a de-duplicated set was derived from it, which decides what de-duplication kept."""
    return [
        TurnCounts(
            turn_id=row.turn.turn_id,
            nuggets=row.nuggets,
            deduplicated=row.derived_unmarked if stats.derived else row.unmarked,
            words=row.words,
        )
        for row in rows
    ]
