"""A collection's files in: topics (iKAT JSON or TREC `id<TAB>query`), passages (JSONL), and runs (TREC run
files, iKAT JSON runs and TREC RAG 2024 answers, as rankings and responses)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from django.db import connections, router, transaction

from annotation.collection.checks import run_report_store
from annotation.collection.placeholder import is_placeholder
from annotation.collection.rankings import rankings_store, trec_run_import
from annotation.formats.base import MAX_PROBLEMS, MAX_RUN_NAME, Problems, check_name
from annotation.formats.runs import parse_run, run_format
from annotation.formats.topics import parse_topics, passage_records
from annotation.models import (
    Collection,
    Passage,
    PtkbStatement,
    Response,
    ResponseSentence,
    Run,
    Topic,
    Turn,
)
from annotation.services import (
    PASSAGES,
    PTKB_STATEMENTS,
    RESPONSES,
    TOPICS,
    TURNS,
    ImportResult,
    KindCounts,
    sync_fields,
    turns_for,
)
from core.bulk import model_rows_copy
from core.staging import Stage, staged

# Passages are written this many lines at a time, so that an import's progress is told between batches.
BATCH = 2000
# Answers are compared and written this many at a time (progress is told between blocks); a block's
# sentences go in one COPY (core/bulk.py), their citations as JSON text.
RESPONSE_BLOCK = 500


# --- Topics ----------------------------------------------------------------------------------------


@transaction.atomic
def topics_import(
    *, path: str | Path, collection: Collection, progress: Callable[[int, int], None] | None = None
) -> ImportResult:
    """Load iKAT topics JSON (2023 and 2024 shapes) or a TREC `id<TAB>query` file into a collection.

    Topics, turns and PTKB statements are matched by their ids, so importing the same file again
    changes nothing and a corrected file updates texts in place. Every problem of the file, its
    syntax and its turns that belong to other topics alike, is reported in one pass.
    `progress(done, total)` counts the file's topics stored so far, told after each topic.
    """
    problems = Problems(str(path))
    records = parse_topics(path, problems=problems)
    result = ImportResult(kinds={kind: KindCounts() for kind in (TOPICS, TURNS, PTKB_STATEMENTS)})
    topics = {t.number: t for t in collection.topics.all()}
    turns = {t.turn_id: t for t in collection.turns.select_related("topic")}
    for record in records:
        for turn_record in record.turns:
            existing = turns.get(turn_record.turn_id)
            if existing is not None and existing.topic.number != record.number:
                problems.add(
                    turn_record.line,
                    f"turn {turn_record.turn_id} already belongs to topic {existing.topic.number}",
                )
    problems.raise_if_any()

    for done, record in enumerate(records, start=1):
        topic = topics.get(record.number)
        if topic is None:
            topic = Topic.objects.create(collection=collection, number=record.number, title=record.title)
            topics[record.number] = topic
            result.count(TOPICS, "created")
        elif sync_fields(topic, {"title": record.title}):
            topic.save(update_fields=["title"])
            result.count(TOPICS, "updated")
        else:
            result.count(TOPICS, "unchanged")
        statements = {s.statement_id: s for s in topic.ptkb.all()}
        for statement_id, text in record.ptkb.items():
            statement = statements.get(statement_id)
            if statement is None:
                PtkbStatement.objects.create(topic=topic, statement_id=statement_id, text=text)
                result.count(PTKB_STATEMENTS, "created")
            elif statement.text != text:
                statement.text = text
                statement.save(update_fields=["text"])
                result.count(PTKB_STATEMENTS, "updated")
            else:
                result.count(PTKB_STATEMENTS, "unchanged")
        for turn_record in record.turns:
            values = {
                "position": turn_record.position,
                "utterance": turn_record.utterance,
                "resolved_utterance": turn_record.resolved_utterance,
                "response": turn_record.response,
                "response_provenance": turn_record.response_provenance,
                "ptkb_provenance": turn_record.ptkb_provenance,
            }
            turn = turns.get(turn_record.turn_id)
            if turn is None:
                turns[turn_record.turn_id] = Turn.objects.create(
                    collection=collection, topic=topic, turn_id=turn_record.turn_id, **values
                )
                result.count(TURNS, "created")
            elif sync_fields(turn, values):
                turn.save(update_fields=list(values))
                result.count(TURNS, "updated")
            else:
                result.count(TURNS, "unchanged")
        if progress is not None:
            progress(done, len(records))
    return result


# --- Passages --------------------------------------------------------------------------------------


@transaction.atomic
def passages_import(
    *, path: str | Path, collection: Collection, progress: Callable[[int, int], None] | None = None
) -> ImportResult:
    """Load passages JSONL (iKAT `doc_id:passage_id` or generic `{id, text|contents, title}`).

    A passage file can hold gigabytes: it is read a line at a time into a stage in the database
    (core/staging.py), checked there (a passage given twice) and compared with the stored passages
    there, so neither the file nor the collection's passages pass through memory whole; the transaction
    keeps the import all or nothing. `progress(done, total)` counts the file's passages: the unchanged
    ones once compared, then the new and changed ones as each batch of lines is written.
    """
    problems = Problems(str(path))
    columns = [("passage_id", "varchar(255) NOT NULL"), ("title", "text NOT NULL"), ("body", "text NOT NULL")]
    with staged(Stage(router.db_for_write(Passage), "passage_stage", columns, key=("passage_id",))) as stage:
        stage.fill((r.line, r.passage_id, r.title, r.text) for r in passage_records(path, problems=problems))
        stage.seal(("line",))
        count, repeated = stage.repeated(limit=MAX_PROBLEMS)
        for line, passage_id, first in repeated:
            problems.add(line, f"passage {passage_id} appears twice (first on line {first})")
        problems.more += count - len(repeated)
        problems.raise_if_any()
        return _passages_store(stage, collection, progress)


def _passages_store(
    stage: Stage, collection: Collection, progress: Callable[[int, int], None] | None
) -> ImportResult:
    table, rows = (
        connections[router.db_for_write(Passage)].ops.quote_name(Passage._meta.db_table),
        stage.table,
    )
    stored = f"{table}.collection_id = %s AND {table}.passage_id = s.passage_id"
    differs = f"({table}.title <> s.title OR {table}.text <> s.body)"
    lines = "s.line BETWEEN %s AND %s"
    with stage.connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {differs} THEN 1 ELSE 0 END), 0) "
            f"FROM {rows} s JOIN {table} ON {stored}",
            [collection.pk],
        )
        existing, changed = cursor.fetchone()
        cursor.execute(f"SELECT MAX(line) FROM {rows}")
        (last,) = cursor.fetchone()
        result = ImportResult()
        result.count(PASSAGES, "unchanged", existing - changed)
        done = existing - changed
        if progress is not None:
            progress(done, stage.rows)
        # Written in batches of lines (a statement each), in file order, so that progress is told between;
        # once a kind's rows are all written, its statements stop.
        to_update, to_create = changed, stage.rows - existing
        for start in range(1, last + 1 if done < stage.rows else 1, BATCH):
            updated = created = 0
            if to_update:
                # The batch's passage ids first (their line index), then the passages' unique index: an
                # UPDATE ... FROM or a join may be planned as a scan of the collection's passages per batch.
                own = f"FROM {rows} s WHERE s.passage_id = {table}.passage_id"
                cursor.execute(
                    f"UPDATE {table} SET title = (SELECT s.title {own}), text = (SELECT s.body {own}) "
                    f"WHERE collection_id = %s AND passage_id IN (SELECT s.passage_id FROM {rows} s WHERE "
                    f"{lines}) AND EXISTS (SELECT 1 {own} AND (s.title <> {table}.title OR s.body <> {table}.text))",
                    [collection.pk, start, start + BATCH - 1],
                )
                updated = cursor.rowcount
            if to_create:
                # The stored passages skipped by the unique index, a lookup a line: a NOT EXISTS is planned
                # (generic plan of a prepared statement) as an anti join scanning the collection's passages,
                # every batch rereading all before it once the database holds another collection.
                cursor.execute(
                    f"INSERT INTO {table} (collection_id, passage_id, title, text) "
                    f"SELECT %s, s.passage_id, s.title, s.body FROM {rows} s WHERE {lines} ORDER BY s.line "
                    "ON CONFLICT (collection_id, passage_id) DO NOTHING",
                    [collection.pk, start, start + BATCH - 1],
                )
                created = cursor.rowcount
            to_update, to_create = to_update - updated, to_create - created
            result.count(PASSAGES, "updated", updated)
            result.count(PASSAGES, "created", created)
            done += updated + created
            if progress is not None and updated + created:
                progress(done, stage.rows)
    return result


# --- Runs ------------------------------------------------------------------------------------------


def _rag_topics_create(collection: Collection, records: Iterable) -> set[str]:
    """TREC RAG answers may name topics the collection has not seen: create a one-turn topic for each, and
    return their ids. Written in two statements whatever their number (a file names thousands of topics)."""
    known = set(Turn.objects.filter(collection=collection).values_list("turn_id", flat=True))
    missing: dict[str, str] = {}
    for response in records:
        if response.turn_id not in known and response.turn_id not in missing:
            missing[response.turn_id] = response.topic_title
    if not missing:
        return set()
    topics = {t.number: t for t in Topic.objects.filter(collection=collection, number__in=list(missing))}
    fresh = [
        Topic(collection=collection, number=turn_id, title=title)
        for turn_id, title in missing.items()
        if turn_id not in topics
    ]
    topics.update((topic.number, topic) for topic in Topic.objects.bulk_create(fresh))
    Turn.objects.bulk_create(
        Turn(
            collection=collection,
            topic=topics[turn_id],
            turn_id=turn_id,
            position=1,
            utterance=title or turn_id,
        )
        for turn_id, title in missing.items()
    )
    return set(missing)


@transaction.atomic
def run_import(
    *,
    path: str | Path,
    collection: Collection,
    name: str | None = None,
    group: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> list[tuple[Run, ImportResult]]:
    """Load a TREC run, an iKAT JSON run, or TREC RAG 2024 answers; re-importing replaces in place.

    Every problem of the file, its syntax and its turns the collection lacks alike, is reported in one
    pass (TREC RAG answers create the topics they name instead). `progress(done, total)` counts the
    rankings and responses of the file stored so far, told after each chunk of rankings and each response.
    A TREC run streams (annotation/collection/rankings.py); the JSON shapes, one record per turn or answer, are
    read whole.
    """
    pathname = str(path)
    if name is not None:
        check_name(name, "run name", MAX_RUN_NAME)

    def run_for(run_name: str, kind: str = "automatic", source_format: str = "trec") -> Run:
        run, created = Run.objects.get_or_create(
            collection=collection,
            name=run_name,
            defaults={"kind": kind, "source_format": source_format, "group": group},
        )
        if not created and sync_fields(run, {"kind": kind, "source_format": source_format}):
            run.save(update_fields=["kind", "source_format"])
        return run

    if run_format(path) == "trec":
        run, result = trec_run_import(
            path=path, collection=collection, name=name, run_for=run_for, progress=progress
        )
        run_report_store(run=run)
        return [(run, result)]
    problems = Problems(pathname)
    records = parse_run(path, name, problems=problems)
    wanted: dict[str, int] = {}
    for record in records:
        for turn_id, line in record.turn_lines.items():
            wanted[turn_id] = min(line, wanted.get(turn_id, line))
    # TREC RAG answers create the topics they name; any other run names turns the collection must hold.
    creates_topics = any(record.source_format == "rag-jsonl" for record in records)
    turns = turns_for(collection, pathname, {} if creates_topics else wanted, problems=problems)
    problems.raise_if_any()

    total = sum(len(record.rankings) + len(record.responses) for record in records)
    done = 0

    def step(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None and count:
            progress(done, total)

    created: set[str] = set()
    if creates_topics:
        created = _rag_topics_create(collection, [r for record in records for r in record.responses])
        turns = turns_for(collection, pathname, wanted)
    results: list[tuple[Run, ImportResult]] = []
    for record in records:
        run = run_for(record.name, record.kind, record.source_format)
        result = ImportResult()
        # Each topic the answers created is told once, by the first run that names it.
        named = {response.turn_id for response in record.responses} & created
        if named:
            result.count(TOPICS, "created", len(named))
            created -= named
        rankings = {turns[turn_id].id: ranking for turn_id, ranking in record.rankings.items()}
        rankings_store(run, rankings, result, step)
        _responses_store(run, turns, record.responses, result, step)
        run_report_store(run=run, duplicates=record.duplicates, topics_created=len(named))
        results.append((run, result))
    return results


def _responses_store(
    run: Run, turns: dict[str, Turn], responses: list, result: ImportResult, step: Callable[[int], None]
) -> None:
    """The run's answers compared with its stored ones and written a block at a time: the block's replaced
    responses deleted, its new ones inserted in one statement (PostgreSQL returns their ids, so their
    sentences need no query to find them), their sentences in another; a response a statement took
    minutes for a TREC RAG track's thousands of answers."""
    existing = {
        (r.turn_id, r.rank): r for r in Response.objects.filter(run=run).prefetch_related("sentences")
    }
    for start in range(0, len(responses), RESPONSE_BLOCK):
        block = responses[start : start + RESPONSE_BLOCK]
        lengths: list[Response] = []
        replaced: list[int] = []
        fresh: list[tuple[Response, list[tuple[str, list]]]] = []
        for record in block:
            turn = turns[record.turn_id]
            sentences = [(s.text, s.citations) for s in record.sentences]
            current = existing.get((turn.id, record.rank))
            if current is not None:
                stored = [(s.text, s.citations) for s in current.sentences.all()]
                if (
                    current.text == record.text
                    and current.references == record.references
                    and stored == sentences
                ):
                    # The length alone is updated in place: the answer's labels point at this row.
                    if current.response_length != record.response_length:
                        current.response_length = record.response_length
                        lengths.append(current)
                        result.count(RESPONSES, "updated")
                    else:
                        result.count(RESPONSES, "unchanged")
                    continue
                replaced.append(current.pk)
                result.count(RESPONSES, "updated")
            else:
                result.count(RESPONSES, "created")
            response = Response(
                run=run,
                turn=turn,
                rank=record.rank,
                text=record.text,
                references=record.references,
                response_length=record.response_length,
            )
            fresh.append((response, sentences))
        if lengths:
            Response.objects.bulk_update(lengths, ["response_length"])
        if replaced:
            # Before the inserts: a replacement takes its old row's (run, turn, rank).
            Response.objects.filter(pk__in=replaced).delete()
        Response.objects.bulk_create([response for response, _ in fresh])
        model_rows_copy(
            ResponseSentence,
            columns=("response_id", "index", "text", "citations", "placeholder"),
            rows=(
                (response.pk, i, text, json.dumps(citations), is_placeholder(text))
                for response, sentences in fresh
                for i, (text, citations) in enumerate(sentences)
            ),
        )
        step(len(block))


# --- Qrels -----------------------------------------------------------------------------------------
