"""The writers of support labels: (answer sentence, cited passage) -> Full / Partial / No support."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connections, models, router, transaction
from django.utils import timezone

from annotation.labels.writer import JudgmentRefused, Written, labelled_submit
from annotation.models import (
    Collection,
    Condition,
    Judge,
    Response,
    ResponseSentence,
    Run,
    SupportJudgment,
    SupportLabel,
    Turn,
)
from core.staging import Stage, staged

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
    return labelled_submit(
        SupportJudgment,
        unit={"judge": judge, "sentence": sentence, "citation_index": citation_index},
        field="label",
        label=label,
        condition=condition,
        shown_label=shown_label,
        time_spent_ms=time_spent_ms,
        create_only={"passage_id": sentence.citations[citation_index]},
    )


@dataclass(frozen=True)
class SupportRow:
    sentence_id: int
    citation_index: int
    passage_id: str
    label: str


# Units written per statement: the arrays a statement carries stay small whatever the number of rows.
_BLOCK = 10_000

# One statement of one shape whatever the number of rows (an array per column). A label equal to the stored
# one is no conflict to act on, so it is not written again; a revision changes the label and nothing else
# (the condition, the label shown and the time spent are those of the unit's first label). `xmax = 0` is
# PostgreSQL's mark of a row this statement inserted rather than updated.
_UPSERT = (
    "INSERT INTO {table} AS r (judge_id, sentence_id, citation_index, passage_id, label, condition, "
    "shown_label, changed, time_spent_ms, created_at, updated_at) "
    "SELECT %s, s, c, p, l, %s, '', NULL, NULL, %s, %s "
    "FROM unnest(%s::bigint[], %s::integer[], %s::text[], %s::text[]) AS u(s, c, p, l) "
    "ON CONFLICT (judge_id, sentence_id, citation_index) DO UPDATE "
    "SET label = excluded.label, updated_at = excluded.updated_at WHERE r.label <> excluded.label "
    "RETURNING xmax = 0"
)


@transaction.atomic
def support_judgments_upsert(*, judge: Judge, rows: Iterable[SupportRow], condition: str) -> Written:
    """Make the judge's support labels of the given units say what `rows` say, new units labelled in
    `condition`: a block of ten thousand units in one statement, idempotent (a label equal to the stored
    one changes nothing), and safe beside another writer of the same units (the unique unit decides).
    A unit given twice keeps its last label."""
    wanted = {(r.sentence_id, r.citation_index): r for r in rows}
    for row in wanted.values():
        _support_label_check(row.label)
    written = Written()
    units = list(wanted.values())
    sql = _UPSERT.format(table=_table(SupportJudgment))
    now = timezone.now()
    with connections[router.db_for_write(SupportJudgment)].cursor() as cursor:
        for start in range(0, len(units), _BLOCK):
            block = units[start : start + _BLOCK]
            cursor.execute(
                sql,
                [
                    judge.pk,
                    condition,
                    now,
                    now,
                    [r.sentence_id for r in block],
                    [r.citation_index for r in block],
                    [r.passage_id for r in block],
                    [r.label for r in block],
                ],
            )
            inserted = [created for (created,) in cursor.fetchall()]
            written.created += sum(inserted)
            written.updated += len(inserted) - sum(inserted)
            written.unchanged += len(block) - len(inserted)
    return written


@dataclass(frozen=True)
class MachineSupportLabel:
    """A machine judge's label of an answer sentence against its first cited passage (`passage_id`)."""

    sentence_id: int
    passage_id: str
    label: str


def support_machine_labels_submit(*, judge: Judge, labels: Sequence[MachineSupportLabel]) -> Written:
    """Record or revise a machine judge's (LLM, NLI) support labels, many at a time (a job's, as it saves
    them). A machine labels each answer sentence against its first cited passage, as the TREC 2024 RAG
    support evaluation does: citation 0, in condition MACHINE."""
    return support_judgments_upsert(
        judge=judge,
        rows=[SupportRow(label.sentence_id, 0, label.passage_id, label.label) for label in labels],
        condition=Condition.MACHINE,
    )


class SupportStage(Stage):
    """A support label file's rows staged (core/staging.py): the unit as the file names it (run, topic,
    sentence index, cited passage) and the label, then the sentence and citation index it resolves to
    (`resolve`), so that a file of a million labels is checked and written in the database with the same
    memory whatever its size."""

    def __init__(self, db: str) -> None:
        super().__init__(
            db,
            "support_stage",
            [
                ("run_id", "varchar(255) NOT NULL"),
                ("topic_id", "varchar(255) NOT NULL"),
                ("sentence_index", "bigint NOT NULL"),
                ("passage_id", "varchar(255) NOT NULL"),
                ("label", "varchar(2) NOT NULL"),
                ("sentence_id", "bigint"),
                ("citation_index", "integer"),
            ],
            key=("run_id", "topic_id", "sentence_index", "passage_id"),
        )

    def resolve(self, *, collection: Collection) -> None:
        """Find each row's sentence (of the run's first-ranked answer to the topic) and the first position of
        its passage among the sentence's citations; either stays NULL when there is none."""
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {self.table} st SET sentence_id = se.id, citation_index = ("
                "SELECT MIN(c.n) - 1 FROM jsonb_array_elements_text(se.citations) WITH ORDINALITY AS c(p, n) "
                "WHERE c.p = st.passage_id) "
                f"FROM {_table(ResponseSentence)} se JOIN {_table(Response)} re ON re.id = se.response_id "
                f"JOIN {_table(Run)} ru ON ru.id = re.run_id JOIN {_table(Turn)} tu ON tu.id = re.turn_id "
                "WHERE ru.collection_id = %s AND re.rank = 1 AND ru.name = st.run_id "
                "AND tu.turn_id = st.topic_id AND se.index = st.sentence_index",
                [collection.pk],
            )

    def unresolved(self, *, limit: int) -> tuple[int, list[tuple[int, str, str, int, str, bool]]]:
        """How many rows name no sentence or a passage their sentence does not cite, and the first `limit`
        by line as (line, run, topic, sentence index, passage id, whether the sentence exists)."""
        return self.sampled(
            "s.citation_index IS NULL",
            columns="s.line, s.run_id, s.topic_id, s.sentence_index, s.passage_id, s.sentence_id IS NOT NULL",
            limit=limit,
        )


@contextmanager
def support_stage() -> Iterator[SupportStage]:
    """A fresh stage for one file, inside the caller's transaction (its rollback drops the table too)."""
    with staged(SupportStage(router.db_for_write(SupportJudgment))) as stage:
        yield stage


@transaction.atomic
def support_judgments_upsert_stage(*, judge: Judge, stage: SupportStage, condition: str) -> Written:
    """Make the judge's support labels of the staged units say what the sealed, resolved `stage` says, each
    of its rows resolved to one unit (the caller checked them) with a label of SupportLabel; new units are
    labelled in `condition`. Idempotent, and set-based: the stage's `restate` (core/staging.py)."""
    done = stage.restate(
        _table(SupportJudgment),
        owner=("judge_id", judge.pk),
        unit=("sentence_id", "citation_index"),
        label="label",
        copied=("passage_id",),
        fixed={"condition": condition, "shown_label": ""},
    )
    return Written(created=done.created, updated=done.updated, unchanged=done.unchanged)


def _table(model: type[models.Model]) -> str:
    return connections[router.db_for_write(model)].ops.quote_name(model._meta.db_table)
