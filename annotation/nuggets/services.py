"""Gold nuggets as passage spans, their de-duplication, and gold responses: services and selectors.

An assessor's nuggets are continuous spans of the stored passage text (`passage_id`, `start`, `end`
as Python string offsets, i.e. code points). The server is the judge of a span: it checks the offsets
and that the text is exactly that slice, so what is stored can always be found again in the passage.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Max

from annotation.labels.writer import JudgmentRefused
from annotation.models import (
    GoldResponse,
    Judge,
    Nugget,
    NuggetSetTurn,
    Passage,
    RelevanceJudgment,
    Turn,
)
from annotation.nuggets.writer import gold_response_submit, nugget_duplicates_mark, nugget_upsert

KEY_NUMBER = re.compile(r"^\[(\d+)\]$")
_T = TypeVar("_T")


class NuggetRejected(ValueError):
    """A nugget change that the server refuses; the message is the reason shown to the assessor."""


# --- Spans -----------------------------------------------------------------------------------------


def _recorded(writer: Callable[..., _T], **kwargs: Any) -> _T:
    """Call one of the judgment writers, saying its refusal the way the nugget pages show reasons."""
    try:
        return writer(**kwargs)
    except JudgmentRefused as exc:
        raise NuggetRejected(str(exc)) from None


def span_check(*, passage_text: str, start: int, end: int, text: str) -> tuple[int, int, str]:
    """The span trimmed of whitespace at its ends, if `text` is exactly `passage_text[start:end]`."""
    length = len(passage_text)
    if not 0 <= start < end <= length:
        raise NuggetRejected(f"span {start}-{end} is outside the passage (0 <= start < end <= {length})")
    if passage_text[start:end] != text:
        raise NuggetRejected(f"the text does not match the passage at {start}-{end}")
    stripped = text.lstrip()
    start += len(text) - len(stripped)
    trimmed = stripped.rstrip()
    end = start + len(trimmed)
    if not trimmed:
        raise NuggetRejected("the span holds only whitespace")
    return start, end, trimmed


def _next_key(judge: Judge, turn: Turn) -> str:
    numbers = [
        int(m.group(1))
        for key in Nugget.objects.filter(judge=judge, turn=turn).values_list("key", flat=True)
        if (m := KEY_NUMBER.match(key))
    ]
    return f"[{max(numbers, default=0) + 1}]"


def nugget_set_cover(judge: Judge, turn: Turn) -> None:
    """Make the judge's set cover the turn, after the turns it covers already."""
    if NuggetSetTurn.objects.filter(judge=judge, turn=turn).exists():
        return
    last = NuggetSetTurn.objects.filter(judge=judge).aggregate(m=Max("position"))["m"]
    NuggetSetTurn.objects.create(judge=judge, turn=turn, position=(last or 0) + 1)


def relevance_grade(*, relevance_judge: Judge | None, turn: Turn, passage_id: str) -> str:
    if relevance_judge is None:
        return ""
    grade = (
        RelevanceJudgment.objects.filter(judge=relevance_judge, turn=turn, passage_id=passage_id)
        .values_list("grade", flat=True)
        .first()
    )
    return "" if grade is None else str(grade)


@transaction.atomic
def nugget_create(
    *,
    judge: Judge,
    turn: Turn,
    passage: Passage,
    start: int,
    end: int,
    text: str,
    relevance: str = "",
    time_spent_ms: int | None = None,
) -> Nugget:
    """Save a span of a passage as the judge's next nugget of the turn (key `[n]`)."""
    if passage.collection_id != turn.collection_id:
        raise NuggetRejected(f"passage {passage.passage_id} is not in the turn's collection")
    # Lock the judge row so two saves at once cannot both take the same next key.
    Judge.objects.select_for_update().filter(pk=judge.pk).first()
    start, end, text = span_check(passage_text=passage.text, start=start, end=end, text=text)
    nugget_set_cover(judge, turn)
    nugget, _ = _recorded(
        nugget_upsert,
        judge=judge,
        turn=turn,
        key=_next_key(judge, turn),
        text=text,
        passage_id=passage.passage_id,
        start=start,
        end=end,
        relevance=relevance,
        time_spent_ms=time_spent_ms,
    )
    return nugget


@transaction.atomic
def nugget_span_update(*, nugget: Nugget, start: int, end: int, text: str) -> Nugget:
    """Move a nugget's boundaries within its passage."""
    passage = Passage.objects.filter(
        collection_id=nugget.turn.collection_id, passage_id=nugget.passage_id
    ).first()
    if passage is None:
        raise NuggetRejected(
            f"passage {nugget.passage_id or '(none)'} of this nugget is not in the collection"
        )
    start, end, text = span_check(passage_text=passage.text, start=start, end=end, text=text)
    moved, _ = _recorded(
        nugget_upsert,
        judge=nugget.judge,
        turn=nugget.turn_id,
        key=nugget.key,
        text=text,
        passage_id=nugget.passage_id,
        start=start,
        end=end,
        relevance=nugget.relevance,
        response=nugget.response_id,
        original=nugget.original_id,
    )
    return moved


@transaction.atomic
def nugget_delete(*, nugget: Nugget) -> None:
    """Delete a nugget; nuggets marked as its duplicates become originals again."""
    nugget.delete()


@transaction.atomic
def nugget_duplicate_mark(*, nugget: Nugget, duplicate_of: Nugget | None) -> Nugget:
    """Mark a nugget as a duplicate of another of the same judge and turn (None: not a duplicate).

    Marks stay one level deep: a nugget marked as duplicate of a duplicate points at that one's
    original, and the nugget's own duplicates follow it, so the de-duplicated set is simply the
    nuggets with no mark.
    """
    marks: dict[int, int | None] = {}
    if duplicate_of is not None:
        if duplicate_of.judge_id != nugget.judge_id or duplicate_of.turn_id != nugget.turn_id:
            raise NuggetRejected("a nugget can only duplicate another nugget of the same turn")
        root = duplicate_of
        if root.duplicate_of_id is not None:
            root = Nugget.objects.get(pk=root.duplicate_of_id)
        if root.pk == nugget.pk:
            raise NuggetRejected("a nugget cannot be a duplicate of itself")
        marks.update(dict.fromkeys(nugget.duplicates.values_list("pk", flat=True), root.pk))
        duplicate_of = root
    marks[nugget.pk] = duplicate_of.pk if duplicate_of is not None else None
    nugget_duplicates_mark(marks=marks)
    nugget.refresh_from_db(fields=["duplicate_of", "updated_at"])
    return nugget


@transaction.atomic
def gold_response_save(
    *, judge: Judge, turn: Turn, text: str, nuggets: list[Nugget], is_draft: bool = True
) -> GoldResponse:
    """Save the judge's gold response of a turn and the nuggets it uses (a draft until submitted)."""
    response, _ = _recorded(
        gold_response_submit, judge=judge, turn=turn, text=text, nuggets=nuggets, is_draft=is_draft
    )
    return response
