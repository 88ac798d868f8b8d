"""The nugget lists a nuggetizer file brings into a collection: which questions a judge's set covers and in
which order (a file lists its questions in its own order, which an export gives back), each list written
through the family's writer (annotation/rag_nuggets/writer.py), and the import report's counts of what changed.

annotation/rag_nuggets/io.py reads and writes the files; this module stores what they say.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from annotation.formats.base import ImportFailed, Problems
from annotation.labels.writer import JudgmentRefused
from annotation.models import Collection, Condition, Judge, Nugget, NuggetAssignment, NuggetSetTurn, Turn
from annotation.rag_nuggets.formats import FileNugget
from annotation.rag_nuggets.writer import (
    ImportanceRow,
    NuggetDraft,
    importance_judgments_upsert,
    nugget_list_replace,
)
from annotation.services import ImportResult
from core.ordering import natural_key

NUGGETS, IMPORTANCE, ASSIGNMENTS = "nuggets", "importance labels", "assignments"


def turns_by_id(collection: Collection, wanted: dict[str, int], problems: Problems) -> dict[str, Turn]:
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=collection, turn_id__in=list(wanted))}
    for qid, line in wanted.items():
        if qid not in turns:
            problems.add(line, f"qid {qid} is not a question of collection {collection.name}")
    return turns


def count_into(
    result: ImportResult, kind: str, created: int, updated: int, unchanged: int, deleted: int
) -> None:
    for outcome, n in (
        ("created", created),
        ("updated", updated),
        ("unchanged", unchanged),
        ("deleted", deleted),
    ):
        if n:
            result.count(kind, outcome, n)


def set_order(judge: Judge, collection: Collection, turns: list[Turn]) -> None:
    """The judge's set covers `turns` in this order (nuggetizer files list questions in their own order,
    which an export must give back)."""
    NuggetSetTurn.objects.filter(judge=judge, turn__collection=collection).exclude(
        turn__in=[t.pk for t in turns]
    ).delete()
    current = {c.turn_id: c for c in NuggetSetTurn.objects.filter(judge=judge, turn__collection=collection)}
    for position, turn in enumerate(turns, start=1):
        cover = current.get(turn.pk)
        if cover is None:
            NuggetSetTurn.objects.create(judge=judge, turn=turn, position=position)
        elif cover.position != position:
            cover.position = position
            cover.save(update_fields=["position"])


def cover(judge: Judge, collection: Collection, turns: list[Turn]) -> None:
    """The judge's set covers `turns` too, after the turns it covers already (an assignments file makes
    the lists of questions the judge had none for, an empty one included)."""
    covered = dict(
        NuggetSetTurn.objects.filter(judge=judge, turn__collection=collection).values_list(
            "turn_id", "position"
        )
    )
    last = max(covered.values(), default=0)
    NuggetSetTurn.objects.bulk_create(
        [
            NuggetSetTurn(judge=judge, turn=turn, position=last + i)
            for i, turn in enumerate((t for t in turns if t.pk not in covered), start=1)
        ]
    )


def list_store(
    *, judge: Judge, turn: Turn, nuggets: list[FileNugget], result: ImportResult, line: int, path: str
) -> list[Nugget]:
    """Make the judge's list of the turn be `nuggets` (keys "1".."n") and return its rows in order."""
    drafts = [NuggetDraft(key=str(i), text=n.text) for i, n in enumerate(nuggets, start=1)]
    try:
        written = nugget_list_replace(judge=judge, turn=turn, nuggets=drafts)
    except JudgmentRefused as exc:
        raise ImportFailed([f"{path}:{line}: {exc}"]) from None
    count_into(result, NUGGETS, written.created, written.updated, written.unchanged, written.removed)
    by_key = {n.key: n for n in Nugget.objects.filter(judge=judge, turn=turn)}
    return [by_key[d.key] for d in drafts]


def importance_store(
    *, judge: Judge, collection: Collection, rows: list[ImportanceRow], result: ImportResult
) -> None:
    written = importance_judgments_upsert(
        judge=judge, collection=collection, rows=rows, condition=Condition.IMPORTED
    )
    count_into(result, IMPORTANCE, written.created, written.updated, written.unchanged, 0)


def ordered_turns(collection: Collection, judge: Judge) -> list[tuple[int, str, str]]:
    """(turn pk, turn id, question) of the turns the judge's set covers (a question of a nuggetizer file
    may list no nugget) or where it has nuggets: set order, then natural order."""
    placed = dict(
        NuggetSetTurn.objects.filter(judge=judge, turn__collection=collection).values_list(
            "turn_id", "position"
        )
    )
    columns = ("pk", "turn_id", "utterance")
    rows = set(Turn.objects.filter(pk__in=list(placed)).values_list(*columns)) | set(
        Turn.objects.filter(nuggets__judge=judge, collection=collection).values_list(*columns)
    )
    return sorted(rows, key=lambda r: (r[0] not in placed, placed.get(r[0], 0), natural_key(r[1])))


def assigned_list_owners(*, collection: Collection, judge: Judge) -> QuerySet[Judge]:
    """The judges whose nugget lists `judge` assigned nuggets of in the collection, by name. An EXISTS per
    judge that stops at the first assignment, not a DISTINCT over every assignment joined to its nugget
    (seconds on a TREC RAG-sized evaluation)."""
    assigned = NuggetAssignment.objects.filter(
        judge=judge, response__run__collection=collection, nugget__judge=OuterRef("pk")
    )
    return Judge.objects.filter(Exists(assigned)).order_by("name")
