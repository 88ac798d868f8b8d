"""Nugget and gold-response files in and out of the database (all or nothing, idempotent)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.db import transaction
from django.db.models import Max

from annotation.formats.base import ImportFailed, Problems, excerpt
from annotation.labels.files import Download, Export, Upload, UploadRefused, judge_named
from annotation.labels.writer import JudgmentRefused
from annotation.models import (
    Collection,
    GoldResponse,
    Judge,
    Nugget,
    NuggetSetTurn,
    Passage,
    Turn,
)
from annotation.nuggets.formats import (
    GoldResponseRecord,
    NuggetRecord,
    gold_responses_cone_rag_text,
    gold_responses_jsonl_text,
    nuggets_cone_rag_text,
    nuggets_jsonl_text,
    parse_gold_responses,
    parse_nuggets,
)
from annotation.nuggets.services import nugget_set_cover
from annotation.nuggets.writer import (
    gold_response_submit,
    nugget_duplicates_mark,
    nugget_refusal,
    nugget_upsert,
)
from annotation.services import ImportResult
from core.ordering import natural_key
from core.wording import plural

# --- Imports and exports ---------------------------------------------------------------------------

# Nuggets are upserted one by one; an import's progress is told every this many.
NUGGET_PROGRESS_EVERY = 100


def _collection_turns(
    collection: Collection, path: str, wanted: dict[str, int], problems: Problems | None = None
) -> dict[str, Turn]:
    """The collection's turns of `wanted`; unknown ones are problems, added to `problems` when given
    (the caller raises them with its own), else raised here."""
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=collection, turn_id__in=list(wanted))}
    found = Problems(path) if problems is None else problems
    for turn_id, line in sorted(wanted.items(), key=lambda item: item[1]):
        if turn_id not in turns:
            found.add(line, f"turn {turn_id} is not in collection {collection.name}")
    if problems is None:
        found.raise_if_any()
    return turns


@transaction.atomic
def nuggets_import(
    *,
    path: str | Path,
    collection: Collection,
    judge: Judge,
    fmt: str = "jsonl",
    dedup_of: Judge | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Load a judge's nugget set from a file; the judge's nuggets on the collection then equal the file.

    Nuggets are matched by (turn, key), so the same file twice changes nothing. Spans are checked
    against the passages the collection holds. With `dedup_of`, the file is a de-duplicated set of
    that judge's nuggets: each nugget is linked to the original with the same turn and key.
    Every problem of the file (its syntax, turns, spans and originals alike) is reported in one pass.
    `progress(done, total)` counts the file's nuggets stored so far, told every NUGGET_PROGRESS_EVERY.
    """
    pathname = str(path)
    problems = Problems(pathname)
    parsed = parse_nuggets(path, fmt, problems=problems)
    turns = _collection_turns(collection, pathname, parsed.turn_lines, problems)
    for r in parsed.nuggets:
        refusal = nugget_refusal(text=r.text, start=r.start, end=r.end)
        if refusal:
            problems.add(r.line, f"nugget {r.key}: {refusal}")
    spans = [r for r in parsed.nuggets if r.start is not None]
    passages = dict(
        Passage.objects.filter(
            collection=collection, passage_id__in={r.passage_id for r in spans}
        ).values_list("passage_id", "text")
    )
    for r in spans:
        if r.passage_id in passages and passages[r.passage_id][r.start : r.end] != r.text:
            problems.add(
                r.line, f"nugget {r.key}: the text is not passage {r.passage_id} at {r.start}-{r.end}"
            )
    originals: dict[tuple[int, str], int] = {}
    if dedup_of is not None:
        originals = {
            (turn_id, key): pk
            for pk, turn_id, key in Nugget.objects.filter(
                judge=dedup_of, turn__collection=collection
            ).values_list("id", "turn_id", "key")
        }
        for r in parsed.nuggets:
            if r.turn_id in turns and (turns[r.turn_id].pk, r.key) not in originals:
                problems.add(r.line, f"nugget {r.key} of turn {r.turn_id} is not in {dedup_of.name}'s set")
    problems.raise_if_any()

    result = ImportResult()
    existing = {
        (n.turn_id, n.key): n for n in Nugget.objects.filter(judge=judge, turn__collection=collection)
    }
    seen: set[tuple[int, str]] = set()
    stored: dict[tuple[int, str], Nugget] = {}
    total = len(parsed.nuggets)
    for done, r in enumerate(parsed.nuggets, start=1):
        unit = (turns[r.turn_id].pk, r.key)
        seen.add(unit)
        try:
            nugget, outcome = nugget_upsert(
                judge=judge,
                turn=unit[0],
                key=r.key,
                text=r.text,
                passage_id=r.passage_id,
                start=r.start,
                end=r.end,
                relevance=r.relevance,
                original=originals.get(unit),
            )
        except JudgmentRefused as exc:
            raise ImportFailed([f"{pathname}:{r.line}: nugget {r.key}: {exc}"]) from None
        setattr(result, outcome, getattr(result, outcome) + 1)
        stored[unit] = nugget
        if progress is not None and (done % NUGGET_PROGRESS_EVERY == 0 or done == total):
            progress(done, total)
    stale = [n.pk for unit, n in existing.items() if unit not in seen]
    Nugget.objects.filter(pk__in=stale).delete()
    result.deleted = len(stale)
    marks: dict[int, int | None] = {}
    for r in parsed.nuggets:
        unit = (turns[r.turn_id].pk, r.key)
        marks[stored[unit].pk] = stored[(unit[0], r.duplicate_of)].pk if r.duplicate_of is not None else None
    nugget_duplicates_mark(marks=marks)
    # The set covers the file's turns in the file's order.
    NuggetSetTurn.objects.filter(judge=judge, turn__collection=collection).exclude(
        turn_id__in=[t.pk for t in turns.values()]
    ).delete()
    current = {c.turn_id: c for c in NuggetSetTurn.objects.filter(judge=judge, turn__collection=collection)}
    base = (
        NuggetSetTurn.objects.filter(judge=judge)
        .exclude(turn__collection=collection)
        .aggregate(m=Max("position"))
    )
    offset = base["m"] or 0
    for index, turn_id in enumerate(parsed.turns, start=1):
        turn = turns[turn_id]
        cover = current.get(turn.pk)
        if cover is None:
            NuggetSetTurn.objects.create(judge=judge, turn=turn, position=offset + index)
        elif cover.position != offset + index:
            cover.position = offset + index
            cover.save(update_fields=["position"])
    return result


def _set_turns(collection: Collection, judge: Judge) -> list[tuple[int, str]]:
    """(turn pk, turn id) the judge's set covers: in set order, then turns with nuggets but no place."""
    ordered = list(
        NuggetSetTurn.objects.filter(judge=judge, turn__collection=collection)
        .order_by("position")
        .values_list("turn_id", "turn__turn_id")
    )
    placed = {pk for pk, _ in ordered}
    rest = set(
        Nugget.objects.filter(judge=judge, turn__collection=collection)
        .exclude(turn_id__in=placed)
        .values_list("turn_id", "turn__turn_id")
    )
    return ordered + sorted(rest, key=lambda row: natural_key(row[1]))


def nugget_records(
    *, collection: Collection, judge: Judge, dedup: bool = False
) -> tuple[list[str], list[NuggetRecord]]:
    """The judge's set as records in set order; with `dedup`, only nuggets not marked as duplicates."""
    turns = _set_turns(collection, judge)
    position = {pk: i for i, (pk, _) in enumerate(turns)}
    queryset = Nugget.objects.filter(judge=judge, turn__collection=collection)
    if dedup:
        queryset = queryset.filter(duplicate_of__isnull=True)
    columns = ("turn_id", "id", "turn__turn_id", "key", "text", "passage_id", "start", "end", "relevance")
    rows = sorted(
        queryset.values_list(*columns, "duplicate_of__key"), key=lambda row: (position[row[0]], row[1])
    )
    records = [
        NuggetRecord(
            turn_id=turn_id,
            key=key,
            text=text,
            passage_id=passage_id,
            start=start,
            end=end,
            relevance=relevance,
            duplicate_of=duplicate_key,
            judge=judge.name,
        )
        for _turn, _pk, turn_id, key, text, passage_id, start, end, relevance, duplicate_key in rows
    ]
    return [turn_id for _, turn_id in turns], records


def nuggets_export(*, collection: Collection, judge: Judge, fmt: str = "jsonl", dedup: bool = False) -> str:
    turns, records = nugget_records(collection=collection, judge=judge, dedup=dedup)
    if fmt == "cone-rag":
        return nuggets_cone_rag_text(turns, records)
    return nuggets_jsonl_text(records)


def _texts_not_nuggets(turns: int, *, judge: Judge, nugget_judge: Judge) -> str:
    """What to do when a CONE-RAG response file's nugget texts are not the nugget judge's nuggets.

    The released gold_response_and_nuggets_human.json names, for each response, the nuggets its writer
    put in it; they are not the passage nuggets of gold_nuggets_human.json, so it never matches that
    set. Its nuggets are created from its texts under a nugget judge with none on these turns.
    """
    own = (
        f"leave the nugget judge out to create them as {judge.name}'s own"
        if nugget_judge.pk != judge.pk
        else f"{judge.name} already has other nuggets there"
    )
    return (
        f"In {plural(turns, 'turn')}, nuggets are named by texts that {nugget_judge.name}'s set does not "
        "hold. A CONE-RAG gold "
        "response names its nuggets by text; the released gold response file holds the nuggets its writers "
        "used, not the passage nuggets of gold_nuggets_human.json. To import it, name as nugget judge a new "
        f"judge (or one with no nuggets on these turns): its nuggets are created from the file's texts ({own})"
    )


@transaction.atomic
def gold_responses_import(
    *,
    path: str | Path,
    collection: Collection,
    judge: Judge,
    nugget_judge: Judge | None = None,
    fmt: str = "jsonl",
) -> ImportResult:
    """Load gold responses of `judge`, linking the nuggets they use from `nugget_judge`'s set (default: `judge`).

    JSONL names nuggets by key. CONE-RAG names them by text ("matched" are used, "not-matched" are
    not); when the nugget judge has no nugget for a turn yet, its nuggets are created from those
    texts (matched first, keys [1], [2], ...), so a CONE-RAG gold response file round trips.
    """
    pathname = str(path)
    nugget_judge = nugget_judge or judge
    problems = Problems(pathname)
    records = parse_gold_responses(path, fmt, problems=problems)
    turns = _collection_turns(collection, pathname, {r.turn_id: r.line for r in records}, problems)
    by_turn: dict[int, list[Nugget]] = {}
    for nugget in Nugget.objects.filter(judge=nugget_judge, turn__collection=collection).order_by("id"):
        by_turn.setdefault(nugget.turn_id, []).append(nugget)
    chosen: dict[str, list[Nugget] | None] = {}
    unmatched = 0
    for r in records:
        turn = turns.get(r.turn_id)
        if turn is None:
            continue
        nuggets = by_turn.get(turn.pk, [])
        if r.by_key:
            keys = {n.key: n for n in nuggets}
            missing = [k for k in r.nugget_keys if k not in keys]
            if missing:
                problems.add(
                    r.line, f"turn {r.turn_id}: no nugget {', '.join(missing)} in {nugget_judge.name}'s set"
                )
            chosen[r.turn_id] = [keys[k] for k in r.nugget_keys if k in keys]
        elif not nuggets:
            chosen[r.turn_id] = None  # created below from the texts
            for text in [*r.matched, *r.not_matched]:
                refusal = nugget_refusal(text=text, start=None, end=None)
                if refusal:
                    problems.add(r.line, f"turn {r.turn_id}: nugget {excerpt(text)}: {refusal}")
        else:
            unused = list(nuggets)
            picked: list[Nugget] = []
            texts = [*r.matched, *r.not_matched]
            absent: list[str] = []
            for text in texts:
                match = next((n for n in unused if n.text == text), None)
                if match is None:
                    absent.append(text)
                    continue
                unused.remove(match)
                picked.append(match)
            if absent:
                unmatched += 1
                problems.add(
                    r.line,
                    f"turn {r.turn_id}: {len(absent)} of its {len(texts)} nugget texts are not nuggets of "
                    f"{nugget_judge.name}, first {excerpt(absent[0])}",
                )
            chosen[r.turn_id] = picked[: len(r.matched)]
    if unmatched:
        problems.add(None, _texts_not_nuggets(unmatched, judge=judge, nugget_judge=nugget_judge))
    problems.raise_if_any()

    result = ImportResult()
    for r in records:
        turn = turns[r.turn_id]
        used = chosen[r.turn_id]
        if used is None:
            if r.matched or r.not_matched:
                nugget_set_cover(nugget_judge, turn)
            created = [
                nugget_upsert(judge=nugget_judge, turn=turn, key=f"[{i}]", text=text)[0]
                for i, text in enumerate([*r.matched, *r.not_matched], start=1)
            ]
            used = created[: len(r.matched)]
        _, outcome = gold_response_submit(
            judge=judge, turn=turn, text=r.text, nuggets=used, is_draft=r.is_draft
        )
        setattr(result, outcome, getattr(result, outcome) + 1)
    return result


def gold_response_records(
    *, collection: Collection, judge: Judge, nugget_judge: Judge | None = None
) -> list[GoldResponseRecord]:
    """The judge's gold responses in turn order; `not_matched` are the other nuggets of the turn."""
    responses = list(
        GoldResponse.objects.filter(judge=judge, turn__collection=collection)
        .select_related("turn")
        .prefetch_related("nuggets")
    )
    responses.sort(key=lambda g: natural_key(g.turn.turn_id))
    used_judges = {n.judge_id for g in responses for n in g.nuggets.all()}
    judge_ids = {nugget_judge.pk} if nugget_judge else (used_judges or {judge.pk})
    pool: dict[int, list[Nugget]] = {}
    for n in Nugget.objects.filter(
        judge_id__in=judge_ids, turn__collection=collection, duplicate_of__isnull=True
    ).order_by("id"):
        pool.setdefault(n.turn_id, []).append(n)
    records = []
    for g in responses:
        used = sorted(g.nuggets.all(), key=lambda n: n.pk)
        used_ids = {n.pk for n in used}
        records.append(
            GoldResponseRecord(
                turn_id=g.turn.turn_id,
                text=g.text,
                nugget_keys=[n.key for n in used],
                matched=[n.text for n in used],
                not_matched=[n.text for n in pool.get(g.turn_id, []) if n.pk not in used_ids],
                is_draft=g.is_draft,
            )
        )
    return records


def gold_responses_export(
    *, collection: Collection, judge: Judge, nugget_judge: Judge | None = None, fmt: str = "jsonl"
) -> str:
    records = gold_response_records(collection=collection, judge=judge, nugget_judge=nugget_judge)
    if fmt == "cone-rag":
        return gold_responses_cone_rag_text(records)
    return gold_responses_jsonl_text(records)


# --- The console's upload and download ------------------------------------------------------------


def nuggets_upload(upload: Upload) -> ImportResult:
    """The checks of `import_nuggets`, then its service."""
    options = upload.options
    original = judge_named(options["dedup_of"]) if options.get("dedup_of") else None
    if original is not None and original.name == options["judge"]:
        raise UploadRefused("the de-duplicated set must belong to another judge than the set it reduces")
    return nuggets_import(
        path=upload.path,
        collection=upload.collection,
        judge=upload.judge(),
        fmt=options.get("fmt", "jsonl"),
        dedup_of=original,
        progress=upload.progress,
    )


def nuggets_download(download: Download) -> Export:
    fmt = download.options["fmt"]
    body = nuggets_export(
        collection=download.collection, judge=download.judge, fmt=fmt, dedup=download.options["dedup"]
    )
    # A collection's nuggets (tens per turn), not its labels: written whole.
    return Export([body], f"-nuggets.{'jsonl' if fmt == 'jsonl' else 'json'}")


def gold_responses_upload(upload: Upload) -> ImportResult:
    judge = upload.judge()
    name = upload.options.get("nugget_judge")
    if name and upload.options.get("fmt") == "cone-rag" and not Judge.objects.filter(name=name).exists():
        # CONE-RAG names nuggets by text: a new nugget judge gets its nuggets from the file.
        nuggets_of: Judge | None = upload.judge(name)
    else:
        nuggets_of = judge_named(name) if name else None
    return gold_responses_import(
        path=upload.path,
        collection=upload.collection,
        judge=judge,
        nugget_judge=nuggets_of,
        fmt=upload.options.get("fmt", "jsonl"),
    )


def gold_responses_download(download: Download) -> Export:
    fmt = download.options["fmt"]
    body = gold_responses_export(
        collection=download.collection,
        judge=download.judge,
        nugget_judge=download.options["nugget_judge"],
        fmt=fmt,
    )
    return Export([body], f"-gold-responses.{'jsonl' if fmt == 'jsonl' else 'json'}")
