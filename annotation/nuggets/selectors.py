"""Reads for the nugget pages: relevant passages, judges to choose from, counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import Exists, OuterRef

from annotation.formats.base import excerpt
from annotation.judge_access import NOT_SHARED, judge_readable
from annotation.models import (
    Collection,
    Judge,
    Nugget,
    NuggetSetTurn,
    Passage,
    RelevanceJudgment,
    Turn,
)
from core.ordering import natural_key

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
    judge: Judge
    turns: list[TurnCounts] = field(default_factory=list)

    @property
    def nuggets(self) -> int:
        return sum(t.nuggets for t in self.turns)

    @property
    def deduplicated(self) -> int:
        return sum(t.deduplicated for t in self.turns)

    @property
    def mean_words(self) -> float:
        n = self.nuggets
        return sum(t.words for t in self.turns) / n if n else 0.0

    @property
    def mean_per_turn(self) -> float:
        return self.nuggets / len(self.turns) if self.turns else 0.0

    @property
    def mean_deduplicated_per_turn(self) -> float:
        return self.deduplicated / len(self.turns) if self.turns else 0.0


def nugget_stats(*, collection: Collection, judge: Judge) -> NuggetStats:
    """Per turn and in all: nuggets, de-duplicated nuggets, mean words per nugget (whitespace tokens).

    A nugget survives de-duplication when it is not marked as a duplicate and, if a de-duplicated set
    was derived from this one (another judge's nuggets whose `original` is here), when that set kept it.
    """
    # Whether a de-duplicated set kept a nugget is an EXISTS per row, not an IN list of its ids, so the
    # page's queries stay the same however many nuggets a set has.
    rows = list(
        Nugget.objects.filter(judge=judge, turn__collection=collection)
        .annotate(kept=Exists(Nugget.objects.filter(original_id=OuterRef("pk"))))
        .values_list("id", "turn__turn_id", "text", "duplicate_of_id", "kept")
    )
    derived = any(row[4] for row in rows)
    covered = [
        turn_id
        for turn_id in NuggetSetTurn.objects.filter(judge=judge, turn__collection=collection)
        .order_by("position")
        .values_list("turn__turn_id", flat=True)
    ]
    counts: dict[str, TurnCounts] = {turn_id: TurnCounts(turn_id) for turn_id in covered}
    for _pk, turn_id, text, duplicate_of, kept in rows:
        entry = counts.setdefault(turn_id, TurnCounts(turn_id))
        entry.nuggets += 1
        entry.words += len(text.split())
        if duplicate_of is None and (not derived or kept):
            entry.deduplicated += 1
    turns = sorted(counts.values(), key=lambda t: natural_key(t.turn_id))
    return NuggetStats(judge=judge, turns=turns)
