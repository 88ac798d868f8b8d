"""The one writer of each kind of judgment row.

Pages, the JSON API, imports, crowd aggregation and machine judges all record a label through the
function here for its table, so that the rules of a label (its scale, how time spent adds up over
revisions, what a revision replaces) live in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.db import connections, models, router, transaction
from django.utils import timezone

from annotation.models import (
    Collection,
    GoldResponse,
    Judge,
    NtnJudgment,
    NtrJudgment,
    Nugget,
    PtkbJudgment,
    PtkbStatement,
    RelevanceGrade,
    RelevanceJudgment,
    Response,
    ResponseSentence,
    SupportJudgment,
    SupportLabel,
    Turn,
)


class JudgmentRefused(Exception):
    """The label does not fit its unit (say, a PTKB statement of another conversation)."""


def relevance_judgment_submit(
    *, judge: Judge | int, turn: Turn | int, passage_id: str, grade: int, time_spent_ms: int | None = None
) -> RelevanceJudgment:
    """Record or revise a judge's grade for (turn, passage); time spent adds up over revisions.

    `judge` and `turn` are the objects or, from a caller that has checked them already, their primary
    keys (the assessor API reads them with its ownership check and saves a query each).

    One `INSERT ... ON CONFLICT (judge, turn, passage_id) DO UPDATE` statement (PostgreSQL and SQLite
    speak it alike): it is atomic by itself, so it needs no transaction, and two submits of the same
    pair at the same instant end in one row instead of a lost update or a unique-constraint error.
    It replaces a locked read, a savepoint and an insert: this is the assessors' hot path.
    """
    db = router.db_for_write(RelevanceJudgment)
    quote = connections[db].ops.quote_name
    table = quote(RelevanceJudgment._meta.db_table)
    now = timezone.now()
    sql = (
        f"INSERT INTO {table} (judge_id, turn_id, passage_id, grade, time_spent_ms, created_at, updated_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (judge_id, turn_id, passage_id) DO UPDATE SET grade = excluded.grade, "
        f"time_spent_ms = CASE WHEN excluded.time_spent_ms IS NULL THEN {table}.time_spent_ms "
        f"ELSE COALESCE({table}.time_spent_ms, 0) + excluded.time_spent_ms END, "
        "updated_at = excluded.updated_at "
        "RETURNING id, judge_id, turn_id, passage_id, grade, time_spent_ms, created_at, updated_at"
    )
    turn_pk = turn.pk if isinstance(turn, Turn) else turn
    judge_pk = judge.pk if isinstance(judge, Judge) else judge
    params = (judge_pk, turn_pk, passage_id, grade, time_spent_ms, now, now)
    (judgment,) = RelevanceJudgment.objects.raw(sql, params, using=db)
    if isinstance(judge, Judge):
        judgment.judge = judge
    if isinstance(turn, Turn):
        judgment.turn = turn
    return judgment


@transaction.atomic
def ptkb_judgments_submit(
    *, judge: Judge, turn: Turn, answers: dict[int, bool], time_spent_ms: int | None = None
) -> list[PtkbJudgment]:
    """Record or revise a judge's relevant / not relevant answer for each PTKB statement of the turn.

    `answers` maps statement pks of the turn's conversation to the answer; time spent on the step is
    shared out evenly over its statements and adds up over revisions.
    """
    statements = {s.pk: s for s in PtkbStatement.objects.filter(topic_id=turn.topic_id, pk__in=list(answers))}
    unknown = set(answers) - set(statements)
    if unknown:
        raise JudgmentRefused(f"statements {sorted(unknown)} are not in the PTKB of turn {turn.turn_id}")
    share = None if time_spent_ms is None or not answers else time_spent_ms // len(answers)
    results: list[PtkbJudgment] = []
    for pk, relevant in answers.items():
        judgment, created = PtkbJudgment.objects.select_for_update().get_or_create(
            judge=judge,
            turn=turn,
            statement=statements[pk],
            defaults={"relevant": relevant, "time_spent_ms": share},
        )
        if not created:
            judgment.relevant = relevant
            if share is not None:
                judgment.time_spent_ms = (judgment.time_spent_ms or 0) + share
            judgment.save(update_fields=["relevant", "time_spent_ms", "updated_at"])
        results.append(judgment)
    return results


# --- Bulk relevance and PTKB labels (qrels files) ----------------------------------------------------


@dataclass(frozen=True)
class RelevanceRow:
    turn_id: int
    passage_id: str
    grade: int


@transaction.atomic
def relevance_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Sequence[RelevanceRow], replace: bool = False
) -> Written:
    """Make the judge's relevance grades on `collection` say what `rows` say (a qrels file).

    Idempotent: a row equal to what is stored changes nothing. With `replace`, the judge's grades on
    the collection that `rows` do not hold are removed, so its labels equal the file. New rows go in
    with one executemany per chunk: for files of tens of thousands of grades, bulk_create spends most
    of an import preparing values field by field, and these rows are already checked.
    """
    written = Written()
    for row in rows:
        if row.grade not in RelevanceGrade.values:
            raise JudgmentRefused(f"grade {row.grade} is outside the scale 0-4")
    stored = {
        (turn_id, passage_id): (pk, grade)
        for pk, turn_id, passage_id, grade in RelevanceJudgment.objects.filter(
            judge=judge, turn__collection=collection
        )
        .values_list("id", "turn_id", "passage_id", "grade")
        .iterator(chunk_size=5000)
    }
    db = router.db_for_write(RelevanceJudgment)
    now = connections[db].ops.adapt_datetimefield_value(timezone.now())
    created: list[tuple[Any, ...]] = []
    changed: list[RelevanceJudgment] = []
    seen: set[tuple[int, str]] = set()
    for row in rows:
        key = (row.turn_id, row.passage_id)
        seen.add(key)
        current = stored.get(key)
        if current is None:
            created.append((judge.pk, row.turn_id, row.passage_id, row.grade, now, now))
        elif current[1] != row.grade:
            changed.append(RelevanceJudgment(id=current[0], grade=row.grade))
        else:
            written.unchanged += 1
    if created:
        quote = connections[db].ops.quote_name
        columns = ", ".join(quote(_column(RelevanceJudgment, name)) for name in _RELEVANCE_INSERT_FIELDS)
        sql = (
            f"INSERT INTO {quote(RelevanceJudgment._meta.db_table)} ({columns}) "
            f"VALUES ({', '.join(['%s'] * len(_RELEVANCE_INSERT_FIELDS))})"
        )
        with connections[db].cursor() as cursor:
            for start in range(0, len(created), _BULK_CHUNK):
                cursor.executemany(sql, created[start : start + _BULK_CHUNK])
    RelevanceJudgment.objects.bulk_update(changed, ["grade"], batch_size=2000)
    written.created, written.updated = len(created), len(changed)
    if replace:
        stale = [pk for key, (pk, _grade) in stored.items() if key not in seen]
        for start in range(0, len(stale), 2000):
            RelevanceJudgment.objects.filter(id__in=stale[start : start + 2000]).delete()
        written.removed = len(stale)
    return written


def _column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field) or not field.column:
        raise ValueError(f"{model.__name__}.{name} is not a column")
    return field.column


_RELEVANCE_INSERT_FIELDS = ("judge", "turn", "passage_id", "grade", "created_at", "updated_at")
_BULK_CHUNK = 20_000


@dataclass(frozen=True)
class PtkbRow:
    turn_id: int
    statement_id: int
    relevant: bool


@transaction.atomic
def ptkb_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Sequence[PtkbRow], replace: bool = False
) -> Written:
    """Make the judge's PTKB labels on `collection` say what `rows` say (a PTKB qrels file); with
    `replace`, its labels the rows do not hold are removed. Idempotent, like the relevance upsert."""
    written = Written()
    stored = {
        (turn_id, statement_id): (pk, relevant)
        for pk, turn_id, statement_id, relevant in PtkbJudgment.objects.filter(
            judge=judge, turn__collection=collection
        ).values_list("id", "turn_id", "statement_id", "relevant")
    }
    created: list[PtkbJudgment] = []
    changed: list[PtkbJudgment] = []
    for row in rows:
        current = stored.get((row.turn_id, row.statement_id))
        if current is None:
            created.append(
                PtkbJudgment(
                    judge=judge, turn_id=row.turn_id, statement_id=row.statement_id, relevant=row.relevant
                )
            )
        elif current[1] != row.relevant:
            changed.append(PtkbJudgment(id=current[0], relevant=row.relevant))
        else:
            written.unchanged += 1
    PtkbJudgment.objects.bulk_create(created)
    PtkbJudgment.objects.bulk_update(changed, ["relevant"])
    written.created, written.updated = len(created), len(changed)
    if replace:
        kept = {(row.turn_id, row.statement_id) for row in rows}
        stale = [pk for key, (pk, _relevant) in stored.items() if key not in kept]
        PtkbJudgment.objects.filter(id__in=stale).delete()
        written.removed = len(stale)
    return written


# --- Nuggets, gold responses, NtR, NtN, support ------------------------------------------------------
#
# A `*_submit` records one judge's label of one unit: a revision replaces the label and the time spent
# on it adds up. A bulk `*_upsert` restates what a file, a crowd provider or an aggregate says now, so it
# is idempotent: a row that says what is stored changes nothing, and a time it gives replaces the
# stored one (the same assignment synced twice must not count its time twice).

Outcome = Literal["created", "updated", "unchanged"]


@dataclass
class Written:
    """What a bulk writer did, row by row."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0


def _time_added(stored: int | None, spent: int | None) -> int | None:
    return stored if spent is None else (stored or 0) + spent


def _nugget_check(*, text: str, start: int | None, end: int | None) -> None:
    if not text.strip():
        raise JudgmentRefused("a nugget needs text")
    if (start is None) != (end is None):
        raise JudgmentRefused("a nugget span needs both its start and its end")
    if start is not None and end is not None and not 0 <= start < end:
        raise JudgmentRefused(f"span {start}-{end} is not a span (0 <= start < end)")


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
    nugget.time_spent_ms = _time_added(nugget.time_spent_ms, time_spent_ms)
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
    response.time_spent_ms = _time_added(response.time_spent_ms, time_spent_ms)
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
    judgment.time_spent_ms = _time_added(judgment.time_spent_ms, time_spent_ms)
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


SUPPORT_LABELS = frozenset(SupportLabel.values)


def _support_label_check(label: str) -> None:
    if label not in SUPPORT_LABELS:
        raise JudgmentRefused(f"label must be one of {', '.join(SupportLabel.values)}, not {label!r}")


@transaction.atomic
def support_judgment_submit(
    *,
    judge: Judge,
    sentence: ResponseSentence,
    citation_index: int,
    label: str,
    condition: str,
    shown_label: str = "",
    time_spent_ms: int | None = None,
) -> SupportJudgment:
    """Record or revise the judge's support label of (sentence, its `citation_index`-th citation).

    A judge labels a unit in one condition only. `shown_label` is the label the judge was shown to
    post-edit (kept from the first submit); `changed` says whether the judge moved away from it.
    """
    _support_label_check(label)
    if not 0 <= citation_index < len(sentence.citations):
        raise JudgmentRefused(f"the sentence has no citation {citation_index}")
    judgment = (
        SupportJudgment.objects.select_for_update()
        .filter(judge=judge, sentence=sentence, citation_index=citation_index)
        .first()
    )
    if judgment is None:
        return SupportJudgment.objects.create(
            judge=judge,
            sentence=sentence,
            citation_index=citation_index,
            passage_id=sentence.citations[citation_index],
            label=label,
            condition=condition,
            shown_label=shown_label,
            changed=(label != shown_label) if shown_label else None,
            time_spent_ms=time_spent_ms,
        )
    if judgment.condition != condition:
        raise JudgmentRefused(
            f"this unit was judged in condition {judgment.condition}; a judge never judges a unit in two conditions"
        )
    judgment.label = label
    judgment.changed = (label != judgment.shown_label) if judgment.shown_label else None
    judgment.time_spent_ms = _time_added(judgment.time_spent_ms, time_spent_ms)
    judgment.save(update_fields=["label", "changed", "time_spent_ms", "updated_at"])
    return judgment


@dataclass(frozen=True)
class SupportRow:
    sentence_id: int
    citation_index: int
    passage_id: str
    label: str


@transaction.atomic
def support_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Iterable[SupportRow], condition: str
) -> Written:
    """Make the judge's support labels of the given units of `collection` say what `rows` say (a label
    file of a run set: tens of thousands of units in a handful of queries)."""
    wanted = {(r.sentence_id, r.citation_index): r for r in rows}
    for row in wanted.values():
        _support_label_check(row.label)
    written = Written()
    if not wanted:
        return written
    stored = {
        (sid, ci): (pk, label)
        for pk, sid, ci, label in SupportJudgment.objects.filter(
            judge=judge, sentence__response__run__collection=collection
        ).values_list("id", "sentence_id", "citation_index", "label")
    }
    created: list[SupportJudgment] = []
    changed: list[SupportJudgment] = []
    now = timezone.now()
    for key, row in wanted.items():
        current = stored.get(key)
        if current is None:
            created.append(
                SupportJudgment(
                    judge=judge,
                    sentence_id=row.sentence_id,
                    citation_index=row.citation_index,
                    passage_id=row.passage_id,
                    label=row.label,
                    condition=condition,
                )
            )
        elif current[1] != row.label:
            changed.append(SupportJudgment(id=current[0], label=row.label, updated_at=now))
        else:
            written.unchanged += 1
    SupportJudgment.objects.bulk_create(created, batch_size=2000)
    SupportJudgment.objects.bulk_update(changed, ["label", "updated_at"], batch_size=2000)
    written.created, written.updated = len(created), len(changed)
    return written
