"""The writers of support labels: (answer sentence, cited passage) -> Full / Partial / No support."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connections, models, router, transaction
from django.utils import timezone

from annotation.labels.writer import JudgmentRefused, Written, labelled_submit, labels_restate
from annotation.models import (
    Collection,
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


# Units written per round (the rows labels_restate holds, the sentence ids a query names).
_BLOCK = 10_000


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
    keys = list(wanted)
    # A block of units at a time, each against the stored labels of its own sentences: a file of a million
    # labels never has a model instance of each in memory, nor reads every stored label per block.
    for start in range(0, len(keys), _BLOCK):
        block = keys[start : start + _BLOCK]
        stored = SupportJudgment.objects.filter(
            judge=judge,
            sentence__response__run__collection=collection,
            sentence_id__in={sid for sid, _ in block},
        )
        done = labels_restate(
            SupportJudgment,
            stored=(
                (pk, (sid, ci), label)
                for pk, sid, ci, label in stored.values_list("id", "sentence_id", "citation_index", "label")
            ),
            wanted={key: wanted[key].label for key in block},
            field="label",
            columns=("judge_id", "sentence_id", "citation_index", "passage_id", "label", "condition"),
            build=lambda key, label: (judge.pk, key[0], key[1], wanted[key].passage_id, label, condition),
        )
        written.created += done.created
        written.updated += done.updated
        written.unchanged += done.unchanged
    return written


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
        bad = f"FROM {self.table} WHERE citation_index IS NULL"
        with self.connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) {bad}")
            (count,) = cursor.fetchone()
            if not count:
                return 0, []
            cursor.execute(
                "SELECT line, run_id, topic_id, sentence_index, passage_id, sentence_id IS NOT NULL "
                f"{bad} ORDER BY line LIMIT %s",
                [limit],
            )
            return count, cursor.fetchall()


@contextmanager
def support_stage() -> Iterator[SupportStage]:
    """A fresh stage for one file, inside the caller's transaction (its rollback drops the table too)."""
    with staged(SupportStage(router.db_for_write(SupportJudgment))) as stage:
        yield stage


@transaction.atomic
def support_judgments_upsert_stage(*, judge: Judge, stage: SupportStage, condition: str) -> Written:
    """Make the judge's support labels of the staged units say what the sealed, resolved `stage` says, each
    of its rows resolved to one unit (the caller checked them) with a label of SupportLabel.

    Idempotent: a label equal to what is stored changes nothing. Each step is one statement over the whole
    stage (counts, update, insert), so neither the file nor the judge's stored labels pass through Python.
    """
    table, stage_table = _table(SupportJudgment), stage.table
    same_unit = "r.judge_id = %s AND r.sentence_id = s.sentence_id AND r.citation_index = s.citation_index"
    now = stage.connection.ops.adapt_datetimefield_value(timezone.now())
    written = Written()
    with stage.connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*), COUNT(r.id), COALESCE(SUM(CASE WHEN r.label <> s.label THEN 1 ELSE 0 END), 0) "
            f"FROM {stage_table} s LEFT JOIN {table} r ON {same_unit}",
            [judge.pk],
        )
        total, stored, changed = cursor.fetchone()
        written.created, written.updated, written.unchanged = total - stored, changed, stored - changed
        if changed:
            cursor.execute(
                f"UPDATE {table} r SET label = s.label, updated_at = %s FROM {stage_table} s "
                f"WHERE {same_unit} AND r.label <> s.label",
                [now, judge.pk],
            )
        if written.created:
            cursor.execute(
                f"INSERT INTO {table} (judge_id, sentence_id, citation_index, passage_id, label, condition, "
                "shown_label, changed, time_spent_ms, created_at, updated_at) "
                f"SELECT %s, s.sentence_id, s.citation_index, s.passage_id, s.label, %s, '', NULL, NULL, %s, %s "
                f"FROM {stage_table} s WHERE NOT EXISTS (SELECT 1 FROM {table} r WHERE {same_unit})",
                [judge.pk, condition, now, now, judge.pk],
            )
    return written


def _table(model: type[models.Model]) -> str:
    return connections[router.db_for_write(model)].ops.quote_name(model._meta.db_table)
