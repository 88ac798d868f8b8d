"""The writers of nuggets, gold responses, nugget-to-response (NtR) and nugget-to-nugget (NtN) labels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.labels.writer import JudgmentRefused, Outcome, Written, time_added
from annotation.models import GoldResponse, Judge, NtnJudgment, NtrJudgment, Nugget, Response, Turn


def nugget_refusal(*, text: str, start: int | None, end: int | None) -> str | None:
    """Why the writers refuse this nugget, or None; imports ask first, to name it with the file's
    other problems instead of stopping at it while writing."""
    if not text.strip():
        return "a nugget needs text"
    if (start is None) != (end is None):
        return "a nugget span needs both its start and its end"
    if start is not None and end is not None and not 0 <= start < end:
        return f"span {start}-{end} is not a span (0 <= start < end)"
    return None


def _nugget_check(*, text: str, start: int | None, end: int | None) -> None:
    refusal = nugget_refusal(text=text, start=start, end=end)
    if refusal:
        raise JudgmentRefused(refusal)


@transaction.atomic
def nugget_upsert(
    *,
    judge: Judge,
    turn: Turn | int,
    key: str,
    text: str,
    passage_id: str = "",
    start: int | None = None,
    end: int | None = None,
    relevance: str = "",
    response: Response | int | None = None,
    original: Nugget | int | None = None,
    time_spent_ms: int | None = None,
) -> tuple[Nugget, Outcome]:
    """Record or revise the judge's nugget `key` of a turn; a revision replaces its text and span.

    Where a span comes from is the caller's to check (an assessor's span is a slice of a passage, a
    machine's of the passage or response it read); the writer checks it is a span at all.
    """
    _nugget_check(text=text, start=start, end=end)
    turn_pk = turn.pk if isinstance(turn, Turn) else turn
    values: dict[str, Any] = {
        "text": text,
        "passage_id": passage_id,
        "start": start,
        "end": end,
        "relevance": relevance,
        "response_id": response.pk if isinstance(response, Response) else response,
        "original_id": original.pk if isinstance(original, Nugget) else original,
    }
    nugget = Nugget.objects.select_for_update().filter(judge=judge, turn_id=turn_pk, key=key).first()
    if nugget is None:
        nugget = Nugget.objects.create(
            judge=judge, turn_id=turn_pk, key=key, time_spent_ms=time_spent_ms, **values
        )
        return nugget, "created"
    if all(getattr(nugget, f) == v for f, v in values.items()) and time_spent_ms is None:
        return nugget, "unchanged"
    for f, v in values.items():
        setattr(nugget, f, v)
    nugget.time_spent_ms = time_added(nugget.time_spent_ms, time_spent_ms)
    fields = ["text", "passage_id", "start", "end", "relevance", "response", "original"]
    nugget.save(update_fields=[*fields, "time_spent_ms", "updated_at"])
    return nugget, "updated"


@transaction.atomic
def nuggets_create(*, nuggets: Sequence[Nugget]) -> list[Nugget]:
    """Store new nuggets at once (a machine's set of a turn, the survivors of a de-duplication)."""
    for nugget in nuggets:
        _nugget_check(text=nugget.text, start=nugget.start, end=nugget.end)
    return Nugget.objects.bulk_create(nuggets, batch_size=1000)


@transaction.atomic
def nugget_duplicates_mark(*, marks: Mapping[int, int | None]) -> int:
    """Set nuggets' duplicate marks (nugget pk -> pk of the nugget it repeats, or None: an original), for
    the nugget page, a nugget file's import and machine de-duplication alike; how many marks changed.

    The callers decide what duplicates what (one level deep, within a judge's turn); this is where the
    rows change, so a mark is stamped like every other revision of a nugget.
    """
    nuggets = list(Nugget.objects.filter(pk__in=list(marks)).only("pk", "duplicate_of"))
    changed = [nugget for nugget in nuggets if nugget.duplicate_of_id != marks[nugget.pk]]
    now = timezone.now()
    for nugget in changed:
        nugget.duplicate_of_id = marks[nugget.pk]
        nugget.updated_at = now
    Nugget.objects.bulk_update(changed, ["duplicate_of", "updated_at"], batch_size=1000)
    return len(changed)


@transaction.atomic
def gold_response_submit(
    *,
    judge: Judge,
    turn: Turn,
    text: str,
    nuggets: Sequence[Nugget],
    is_draft: bool = True,
    time_spent_ms: int | None = None,
) -> tuple[GoldResponse, Outcome]:
    """Record or revise the judge's gold response of a turn and the nuggets it uses (a draft until
    submitted); the nuggets must be the turn's own, and time spent adds up over revisions."""
    for nugget in nuggets:
        if nugget.turn_id != turn.pk:
            raise JudgmentRefused(f"nugget {nugget.key} is not a nugget of turn {turn.turn_id}")
    used = {n.pk for n in nuggets}
    response = GoldResponse.objects.select_for_update().filter(judge=judge, turn=turn).first()
    if response is None:
        response = GoldResponse.objects.create(
            judge=judge, turn=turn, text=text, is_draft=is_draft, time_spent_ms=time_spent_ms
        )
        response.nuggets.set(nuggets)
        return response, "created"
    same = (
        response.text == text
        and response.is_draft == is_draft
        and set(response.nuggets.values_list("id", flat=True)) == used
    )
    if same and time_spent_ms is None:
        return response, "unchanged"
    response.text, response.is_draft = text, is_draft
    response.time_spent_ms = time_added(response.time_spent_ms, time_spent_ms)
    response.save(update_fields=["text", "is_draft", "time_spent_ms", "updated_at"])
    response.nuggets.set(nuggets)
    return response, "updated"


@transaction.atomic
def ntr_judgment_submit(
    *, judge: Judge, response: Response, nugget: Nugget, matched: bool, time_spent_ms: int | None = None
) -> NtrJudgment:
    """Record or revise whether `response` captures the gold `nugget` of its turn."""
    if nugget.turn_id != response.turn_id:
        raise JudgmentRefused(f"nugget {nugget.key} is not a nugget of the response's turn")
    judgment = (
        NtrJudgment.objects.select_for_update().filter(judge=judge, response=response, nugget=nugget).first()
    )
    if judgment is None:
        return NtrJudgment.objects.create(
            judge=judge, response=response, nugget=nugget, matched=bool(matched), time_spent_ms=time_spent_ms
        )
    judgment.matched = bool(matched)
    judgment.time_spent_ms = time_added(judgment.time_spent_ms, time_spent_ms)
    judgment.save(update_fields=["matched", "time_spent_ms", "updated_at"])
    return judgment


@dataclass(frozen=True)
class NtrRow:
    response_id: int
    nugget_id: int
    matched: bool
    time_spent_ms: int | None = None


@transaction.atomic
def ntr_judgments_upsert(
    *, judge: Judge, rows: Iterable[NtrRow], remove: Iterable[tuple[int, int]] = ()
) -> Written:
    """Make the judge's NtR labels of the given (response, nugget) pairs say what `rows` say, and drop
    its labels of the pairs in `remove`; a handful of queries however many rows (crowd campaigns and
    their files run to tens of thousands of pairs)."""
    wanted = {(r.response_id, r.nugget_id): r for r in rows}
    gone = set(remove) - set(wanted)
    written = Written()
    pairs = set(wanted) | gone
    if not pairs:
        return written
    response_turn = dict(Response.objects.filter(id__in={r for r, _ in wanted}).values_list("id", "turn_id"))
    nugget_turn = dict(Nugget.objects.filter(id__in={n for _, n in wanted}).values_list("id", "turn_id"))
    for response_id, nugget_id in wanted:
        if response_id not in response_turn or nugget_id not in nugget_turn:
            raise JudgmentRefused(f"no response {response_id} or no nugget {nugget_id}")
        if response_turn[response_id] != nugget_turn[nugget_id]:
            raise JudgmentRefused(f"nugget {nugget_id} is not a nugget of response {response_id}'s turn")
    stored = {
        (j.response_id, j.nugget_id): j
        for j in NtrJudgment.objects.filter(
            judge=judge, response_id__in={r for r, _ in pairs}, nugget_id__in={n for _, n in pairs}
        )
    }
    created: list[NtrJudgment] = []
    changed: list[NtrJudgment] = []
    now = timezone.now()
    for key, row in wanted.items():
        judgment = stored.get(key)
        if judgment is None:
            created.append(
                NtrJudgment(
                    judge=judge,
                    response_id=row.response_id,
                    nugget_id=row.nugget_id,
                    matched=bool(row.matched),
                    time_spent_ms=row.time_spent_ms,
                )
            )
        elif judgment.matched != bool(row.matched) or (
            row.time_spent_ms is not None and judgment.time_spent_ms != row.time_spent_ms
        ):
            judgment.matched = bool(row.matched)
            if row.time_spent_ms is not None:
                judgment.time_spent_ms = row.time_spent_ms
            judgment.updated_at = now
            changed.append(judgment)
        else:
            written.unchanged += 1
    stale = [stored[key].pk for key in gone if key in stored]
    NtrJudgment.objects.filter(id__in=stale).delete()
    NtrJudgment.objects.bulk_create(created, batch_size=1000)
    NtrJudgment.objects.bulk_update(changed, ["matched", "time_spent_ms", "updated_at"], batch_size=1000)
    written.created, written.updated, written.removed = len(created), len(changed), len(stale)
    return written


@dataclass(frozen=True)
class NtnRow:
    response_nugget_id: int
    gold_nugget_id: int
    entails: bool
    score: float | None = None


@transaction.atomic
def ntn_judgments_store(*, judge: Judge, rows: Iterable[NtnRow]) -> int:
    """Store the judge's NtN verdicts of pairs it has not judged yet; a pair stored meanwhile (another
    worker on the same turn) is kept as it is. Returns the number of rows offered."""
    judgments = []
    for row in rows:
        if row.score is not None and not 0.0 <= row.score <= 1.0:
            raise JudgmentRefused(f"an NtN score is a probability, not {row.score}")
        judgments.append(
            NtnJudgment(
                judge=judge,
                response_nugget_id=row.response_nugget_id,
                gold_nugget_id=row.gold_nugget_id,
                entails=bool(row.entails),
                score=row.score,
            )
        )
    NtnJudgment.objects.bulk_create(judgments, ignore_conflicts=True, batch_size=1000)
    return len(judgments)
