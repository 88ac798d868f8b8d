"""Writes to a test collection. Each service is one transaction: it changes everything or nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from annotation.formats.base import Problems
from annotation.formats.qrels import parse_qrels
from annotation.formats.topics import parse_passages, parse_topics
from annotation.judge_access import (
    AssessorJudgeTaken,
    ImportJudgeRefused,
    assessor_judge_refusal,
    file_judge_refusal,
    judge_name_refusal,
)
from annotation.judgments import RelevanceRow, relevance_judgments_upsert
from annotation.models import (
    Collection,
    Judge,
    Passage,
    PtkbStatement,
    Topic,
    Turn,
)
from core.names import assessor_judge_name, collection_name_problem

BATCH = 2000

# The kinds of record an import counts apart (ImportResult.kinds); pages show them by these names.
TOPICS, TURNS, PTKB_STATEMENTS = "topics", "turns", "PTKB statements"
PASSAGES, RANKINGS, RESPONSES, JUDGMENTS = "passages", "rankings", "responses", "judgments"


OUTCOMES = ("created", "updated", "unchanged", "deleted")


@dataclass
class KindCounts:
    """What an import did to the records of one kind (topics, turns, PTKB statements, ...)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged" + (
            f", {self.deleted} deleted" if self.deleted else ""
        )


@dataclass
class ImportResult(KindCounts):
    """What an import changed; an import of a file already loaded reports zeros.

    The fields are totals over every kind of record the file holds. A service whose file holds several
    kinds counts each with `count`, so a topics file reports its topics, turns and PTKB statements apart
    instead of one sum that reads as a number of topics.
    """

    kinds: dict[str, KindCounts] = field(default_factory=dict)

    def count(self, kind: str, outcome: str, n: int = 1) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r}")
        setattr(self, outcome, getattr(self, outcome) + n)
        counts = self.kinds.setdefault(kind, KindCounts())
        setattr(counts, outcome, getattr(counts, outcome) + n)

    def by_kind(self, default: str = "records") -> dict[str, KindCounts]:
        """Counts per kind; what was counted only in the totals is reported under `default`."""
        rows = {kind: KindCounts(**vars(counts)) for kind, counts in self.kinds.items()}
        rest = KindCounts(
            *(getattr(self, o) - sum(getattr(c, o) for c in self.kinds.values()) for o in OUTCOMES)
        )
        if any(vars(rest).values()) or not rows:
            rows.setdefault(default, KindCounts())
            for outcome in OUTCOMES:
                setattr(rows[default], outcome, getattr(rows[default], outcome) + getattr(rest, outcome))
        return rows

    def __str__(self) -> str:
        if not self.kinds:
            return super().__str__()
        return "; ".join(f"{kind}: {counts}" for kind, counts in self.by_kind().items())


class CollectionNameRefused(ValueError):
    """A new collection may not have the name asked for; the message says why (core.names)."""


def collection_get_or_create(*, name: str, description: str = "") -> Collection:
    """The collection named `name`, created if new; a new one's name must pass
    core.names.collection_name_problem, whichever command, page or script asks."""
    existing = Collection.objects.filter(name=name).first()
    if existing is not None:
        return existing
    problem = collection_name_problem(name)
    if problem:
        raise CollectionNameRefused(problem)
    collection, _ = Collection.objects.get_or_create(name=name, defaults={"description": description})
    return collection


def judge_get_or_create(
    *,
    name: str,
    kind: str = Judge.Kind.IMPORTED,
    model: str = "",
    prompt_version: str = "",
    description: str = "",
    user: User | None = None,
) -> Judge:
    """The judge named `name`, created as `kind` if new. Every judge made from a name someone gave (an
    import, a job, a crowd campaign or label file) comes here, so the rule of
    annotation.judge_access.judge_name_refusal holds on every path: ImportJudgeRefused says why not."""
    existing = Judge.objects.filter(name=name).first()
    refusal = judge_name_refusal(name, kind=kind, existing=existing)
    if refusal:
        raise ImportJudgeRefused(refusal)
    if existing is not None:
        return existing
    judge, _ = Judge.objects.get_or_create(
        name=name,
        defaults={
            "kind": kind,
            "model": model,
            "prompt_version": prompt_version,
            "description": description,
            "user": user,
        },
    )
    return judge


def import_judge_get_or_create(
    *, name: str, kind: str | None = None, model: str = "", prompt_version: str = "", source: str = ""
) -> Judge:
    """The judge a file's labels are imported as (every import command and console upload comes here):
    created if new, as an imported file unless `kind` names a machine or crowd; refused with
    ImportJudgeRefused by the rule of annotation.judge_access.file_judge_refusal."""
    refusal = file_judge_refusal(name, kind=kind, model=model, prompt_version=prompt_version)
    if refusal:
        raise ImportJudgeRefused(refusal)
    return judge_get_or_create(
        name=name,
        kind=kind or Judge.Kind.IMPORTED,
        model=model,
        prompt_version=prompt_version,
        description=f"imported from {source}" if source else "",
    )


def judge_for_assessor(*, user: User) -> Judge:
    """The judge that records an assessor's labels, created on first use.

    Read through the user's `judge` relation, so a user loaded with `select_related("judge")` (the
    assessor API's token authentication does that) or asked twice in one request costs no query.
    """
    try:
        return user.judge
    except Judge.DoesNotExist:
        pass
    refusal = assessor_judge_refusal(username=user.get_username(), user_id=user.pk)
    if refusal:
        raise AssessorJudgeTaken(refusal)
    return Judge.objects.create(
        name=assessor_judge_name(user.get_username()), kind=Judge.Kind.ASSESSOR, user=user
    )


def sync_fields(obj: object, values: dict[str, object]) -> bool:
    changed = False
    for field_name, value in values.items():
        if getattr(obj, field_name) != value:
            setattr(obj, field_name, value)
            changed = True
    return changed


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

    `progress(done, total)` counts the file's passages: the unchanged ones once compared, then the new
    and changed ones as each batch is written.
    """
    records = parse_passages(path)
    result = ImportResult()
    existing = {
        pid: (pk, title, text)
        for pk, pid, title, text in collection.passages.values_list("id", "passage_id", "title", "text")
    }
    to_create: list[Passage] = []
    to_update: list[Passage] = []
    for record in records:
        current = existing.get(record.passage_id)
        if current is None:
            to_create.append(
                Passage(
                    collection=collection, passage_id=record.passage_id, title=record.title, text=record.text
                )
            )
        elif current[1:] != (record.title, record.text):
            to_update.append(Passage(id=current[0], title=record.title, text=record.text))
        else:
            result.count(PASSAGES, "unchanged")
    done = len(records) - len(to_create) - len(to_update)
    if progress is not None:
        progress(done, len(records))
    # Written batch by batch (as bulk_create and bulk_update would batch them) so that progress is told.
    for start in range(0, len(to_create), BATCH):
        Passage.objects.bulk_create(to_create[start : start + BATCH])
        done += len(to_create[start : start + BATCH])
        if progress is not None:
            progress(done, len(records))
    for start in range(0, len(to_update), BATCH):
        Passage.objects.bulk_update(to_update[start : start + BATCH], ["title", "text"])
        done += len(to_update[start : start + BATCH])
        if progress is not None:
            progress(done, len(records))
    result.count(PASSAGES, "created", len(to_create))
    result.count(PASSAGES, "updated", len(to_update))
    return result


# --- Runs ------------------------------------------------------------------------------------------


def turns_for(
    collection: Collection, path: str, wanted: dict[str, int], *, problems: Problems | None = None
) -> dict[str, Turn]:
    """The collection's turns of `wanted` (turn id: first line naming it); each unknown one is a
    problem at its first line, added to `problems` when given (the caller raises), else raised."""
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=collection, turn_id__in=list(wanted))}
    found = Problems(path) if problems is None else problems
    for turn_id, line in sorted(wanted.items(), key=lambda item: item[1]):
        if turn_id not in turns:
            found.add(
                line, f"turn {turn_id} is not in collection {collection.name} (import its topics first)"
            )
    if problems is None:
        found.raise_if_any()
    return turns


@transaction.atomic
def qrels_import(
    *,
    path: str | Path,
    collection: Collection,
    judge: Judge,
    require_passages: bool = False,
    replace: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Load TREC qrels as relevance judgments of `judge`.

    Judgments attach to passage ids, so qrels of passages whose text the collection lacks are fine
    unless `require_passages`. With `replace`, the judge's judgments on this collection that the file
    does not hold are deleted, so the judge's labels equal the file. Every problem of the file, its
    syntax and its turns (and passages) alike, is reported in one pass. `progress(done, total)` counts
    the file's grades stored: none once the file is checked, all once they are written (one upsert).
    """
    pathname = str(path)
    problems = Problems(pathname)
    records = parse_qrels(path, problems=problems)
    wanted: dict[str, int] = {}
    for record in records:
        wanted.setdefault(record.turn_id, record.line)
    turns = turns_for(collection, pathname, wanted, problems=problems)
    if require_passages:
        known = set(
            Passage.objects.filter(
                collection=collection, passage_id__in={r.passage_id for r in records}
            ).values_list("passage_id", flat=True)
        )
        for record in records:
            if record.passage_id not in known:
                problems.add(
                    record.line, f"passage {record.passage_id} is not in collection {collection.name}"
                )
    problems.raise_if_any()

    if progress is not None:
        progress(0, len(records))
    written = relevance_judgments_upsert(
        judge=judge,
        collection=collection,
        rows=[RelevanceRow(turns[r.turn_id].id, r.passage_id, r.grade) for r in records],
        replace=replace,
    )
    if progress is not None:
        progress(len(records), len(records))
    result = ImportResult()
    result.count(JUDGMENTS, "created", written.created)
    result.count(JUDGMENTS, "updated", written.updated)
    result.count(JUDGMENTS, "unchanged", written.unchanged)
    if replace:
        result.count(JUDGMENTS, "deleted", written.removed)
    return result


# --- Judgments -------------------------------------------------------------------------------------
