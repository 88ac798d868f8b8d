"""The judges with labels (`JudgeLabels`), kept by PostgreSQL's triggers on the label tables, equal what the
labels say after every kind of write: the writers, the assessor's grade statement, staged imports, bulk
updates, deletes of a label, a run, a judge and a collection, a label moved to another judge; a regrade
adds nothing; and an installation on labels already there builds their rows."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from annotation.families import LABEL_TASKS
from annotation.labels.judge_labels import PREFIX, judge_labels_install, task_triggers
from annotation.models import (
    Collection,
    Condition,
    Judge,
    JudgeLabels,
    Nugget,
    NuggetImportanceJudgment,
    RelevanceJudgment,
    Run,
    SupportJudgment,
)
from annotation.rag_nuggets.writer import ImportanceRow, importance_judgments_upsert
from annotation.relevance.writer import (
    RelevanceRow,
    relevance_judgment_submit,
    relevance_judgments_upsert,
    relevance_upsert_sql,
)
from tests.annotation.relevance.test_relevance_grade_sql import Campaign
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db

Key = tuple[int, str, str, int]


def counted() -> dict[Key, int]:
    """What the labels say: per (collection, task, condition, judge), the judgments there are."""
    truth: dict[Key, int] = {}
    for task in LABEL_TASKS.values():
        has_condition = any(field.name == "condition" for field in task.model._meta.fields)
        for collection in Collection.objects.all():
            rows = (
                task.rows(collection)
                .values("judge_id", *(["condition"] if has_condition else []))
                .annotate(n=Count("pk"))
                .order_by()
            )
            for row in rows:
                key = (collection.pk, task.name, row.get("condition", ""), row["judge_id"])
                truth[key] = row["n"]
    return truth


def kept() -> dict[Key, int]:
    return {
        (row.collection_id, row.task, row.condition, row.judge_id): row.label_count
        for row in JudgeLabels.objects.all()
    }


def test_a_label_written_by_the_orm_or_the_writer_is_counted_once_in_its_collection():
    here, there = CollectionFactory(), CollectionFactory()
    turn, other = TurnFactory(collection=here), TurnFactory(collection=there)
    judge = JudgeFactory()

    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="a")
    relevance_judgment_submit(judge=judge, turn=turn, passage_id="b", grade=3)
    relevance_judgment_submit(judge=judge, turn=other, passage_id="a", grade=1)

    assert (
        kept()
        == counted()
        == {(here.pk, "relevance", "", judge.pk): 2, (there.pk, "relevance", "", judge.pk): 1}
    )


def test_a_regrade_moves_no_count_and_adds_no_row():
    turn = TurnFactory()
    judge = JudgeFactory()
    relevance_judgment_submit(judge=judge, turn=turn, passage_id="a", grade=1)
    before = list(JudgeLabels.objects.values_list("pk", "label_count"))

    for grade in (2, 3, 0):
        relevance_judgment_submit(judge=judge, turn=turn, passage_id="a", grade=grade)
    RelevanceJudgment.objects.filter(judge=judge).update(grade=4, time_spent_ms=10)

    assert list(JudgeLabels.objects.values_list("pk", "label_count")) == before == [(before[0][0], 1)]
    assert kept() == counted()


def test_the_assessors_grade_statement_keeps_the_counts():
    campaign = Campaign()
    campaign.next("alice")
    campaign.grade("alice", (1, 0), 2)
    campaign.grade("alice", (1, 1), 3)
    campaign.grade("alice", (1, 0), 4, then_next=False)  # a regrade

    alice = Judge.objects.get(user=campaign.alice)
    collection = campaign.assignment.pool.collection
    assert kept()[(collection.pk, "relevance", "", alice.pk)] == 2
    assert kept() == counted()


def test_a_staged_import_with_replace_and_a_bulk_write_keep_the_counts():
    collection = CollectionFactory()
    turns = [TurnFactory(collection=collection) for _ in range(3)]
    judge = JudgeFactory()
    rows = [RelevanceRow(turn.pk, f"doc{i}:0", i % 5) for turn in turns for i in range(4)]
    relevance_judgments_upsert(judge=judge, collection=collection, rows=rows)
    assert kept() == counted() == {(collection.pk, "relevance", "", judge.pk): 12}

    # The file again with other grades and a third of its lines gone: updates, then deletes.
    relevance_judgments_upsert(
        judge=judge,
        collection=collection,
        rows=[RelevanceRow(r.turn_id, r.passage_id, 4) for r in rows[:8]],
        replace=True,
    )

    assert kept() == counted() == {(collection.pk, "relevance", "", judge.pk): 8}


def test_deleting_labels_a_judge_or_a_collection_removes_the_rows_left_without_labels():
    here, there = CollectionFactory(), CollectionFactory()
    turn, other = TurnFactory(collection=here), TurnFactory(collection=there)
    first, second = JudgeFactory(), JudgeFactory()
    for judge in (first, second):
        for passage in ("a", "b"):
            RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=passage)
            RelevanceJudgmentFactory(judge=judge, turn=other, passage_id=passage)

    RelevanceJudgment.objects.filter(judge=first, turn=turn, passage_id="a").delete()
    assert kept()[(here.pk, "relevance", "", first.pk)] == 1
    RelevanceJudgment.objects.filter(judge=first, turn=turn).delete()
    assert (here.pk, "relevance", "", first.pk) not in kept()
    assert kept() == counted()

    second.delete()
    assert kept() == counted() == {(there.pk, "relevance", "", first.pk): 2}

    there.delete()
    assert kept() == counted() == {}


def test_moving_a_label_to_another_judge_or_unit_moves_its_count():
    here, there = CollectionFactory(), CollectionFactory()
    turn, other = TurnFactory(collection=here), TurnFactory(collection=there)
    first, second = JudgeFactory(), JudgeFactory()
    label = RelevanceJudgmentFactory(judge=first, turn=turn, passage_id="a")
    RelevanceJudgmentFactory(judge=first, turn=turn, passage_id="b")

    RelevanceJudgment.objects.filter(pk=label.pk).update(judge=second)
    assert (
        kept()
        == counted()
        == {(here.pk, "relevance", "", first.pk): 1, (here.pk, "relevance", "", second.pk): 1}
    )

    RelevanceJudgment.objects.filter(pk=label.pk).update(turn=other)
    assert (
        kept()
        == counted()
        == {(here.pk, "relevance", "", first.pk): 1, (there.pk, "relevance", "", second.pk): 1}
    )


def test_support_labels_are_kept_per_condition_and_a_run_deleted_takes_its_labels_off(study):
    rag = Collection.objects.get(name="rag24")
    gpt = Judge.objects.get(name="gpt-4o")
    assert kept() == counted()
    conditions = {(task, condition) for (_c, task, condition, _j) in kept()}
    assert conditions == {
        ("support", Condition.MACHINE),
        ("support", Condition.POST_EDIT),
        ("support", Condition.SCRATCH),
    }

    # A label given again in another condition moves between the condition's rows.
    label = SupportJudgment.objects.filter(judge=gpt).first()
    SupportJudgment.objects.filter(pk=label.pk).update(condition=Condition.IMPORTED)
    assert kept()[(rag.pk, "support", Condition.IMPORTED, gpt.pk)] == 1
    assert kept() == counted()

    before = kept()
    Run.objects.get(collection=rag, name="rag-a").delete()
    assert kept() == counted() != before


def test_a_label_that_is_no_judgment_is_not_counted_until_it_becomes_one():
    collection = CollectionFactory()
    turn = TurnFactory(collection=collection, topic=TopicFactory(collection=collection))
    author, labeller = JudgeFactory(), JudgeFactory(kind=Judge.Kind.LLM)
    nuggets = [Nugget.objects.create(judge=author, turn=turn, key=str(i), text=f"n{i}") for i in range(3)]

    importance_judgments_upsert(
        judge=labeller,
        collection=collection,
        rows=[ImportanceRow(nugget.pk, "failed") for nugget in nuggets],
        condition=Condition.MACHINE,
    )
    assert not JudgeLabels.objects.filter(task="nugget-importance").exists()

    importance_judgments_upsert(
        judge=labeller,
        collection=collection,
        rows=[ImportanceRow(nuggets[0].pk, "vital"), ImportanceRow(nuggets[1].pk, "okay")],
        condition=Condition.MACHINE,
    )
    assert kept()[(collection.pk, "nugget-importance", Condition.MACHINE, labeller.pk)] == 2
    NuggetImportanceJudgment.objects.filter(nugget=nuggets[1]).update(importance="failed")
    assert kept()[(collection.pk, "nugget-importance", Condition.MACHINE, labeller.pk)] == 1
    assert kept() == counted()


def test_an_installation_on_labels_already_there_builds_their_rows_and_then_changes_nothing():
    collection = CollectionFactory()
    turn = TurnFactory(collection=collection)
    judge = JudgeFactory()
    table = RelevanceJudgment._meta.db_table
    with connection.cursor() as cursor:
        for trigger in task_triggers(LABEL_TASKS["relevance"]).triggers:
            cursor.execute(f'DROP TRIGGER "{trigger.name}" ON "{table}"')
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="a")
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="b")
    assert kept() == {}

    assert judge_labels_install() == ["relevance"]

    assert kept() == counted() == {(collection.pk, "relevance", "", judge.pk): 2}
    with CaptureQueriesContext(connection) as queries:
        assert judge_labels_install() == []
    assert not any("CREATE" in query["sql"] or "INSERT" in query["sql"] for query in queries.captured_queries)
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="c")
    assert kept() == counted()


def test_a_function_made_otherwise_than_the_declaration_makes_it_now_is_made_again_and_its_rows_rebuilt():
    turn = TurnFactory()
    judge = JudgeFactory()
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="a")
    function = task_triggers(LABEL_TASKS["relevance"]).triggers[0].function
    with connection.cursor() as cursor:
        # An older version's insert trigger, which counted nothing.
        cursor.execute(
            f'CREATE OR REPLACE FUNCTION "{function}"() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$'
        )
        cursor.execute(
            f'CREATE TRIGGER "{PREFIX}_gone" AFTER INSERT ON "{RelevanceJudgment._meta.db_table}" FOR EACH STATEMENT EXECUTE FUNCTION "{function}"()'
        )
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="b")
    assert kept() != counted()

    assert judge_labels_install() == ["relevance"]

    assert kept() == counted()
    with connection.cursor() as cursor:
        cursor.execute("SELECT tgname FROM pg_trigger WHERE tgname = %s", [f"{PREFIX}_gone"])
        assert cursor.fetchall() == []


def test_every_label_task_has_its_triggers():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname LIKE %s",
            [f"{PREFIX}%"],
        )
        installed = set(cursor.fetchall())

    wanted = {
        (t.table, trigger.name)
        for task in LABEL_TASKS.values()
        for t in [task_triggers(task)]
        for trigger in t.triggers
    }
    assert installed == wanted
    assert len(wanted) == 4 * len(LABEL_TASKS)


def test_a_truncated_label_table_leaves_its_task_no_row():
    turn = TurnFactory()
    RelevanceJudgmentFactory(turn=turn)
    assert kept()

    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred check may be pending
        cursor.execute(f'TRUNCATE "{RelevanceJudgment._meta.db_table}" CASCADE')

    assert not JudgeLabels.objects.filter(task="relevance").exists()


def _client(**options):
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        dbname=settings["NAME"],
        **options,
    )


def _grade(client, judge: Judge, turn, passage: str) -> None:
    table = connection.ops.quote_name(RelevanceJudgment._meta.db_table)
    sql = relevance_upsert_sql(table=table, rows="VALUES (%s, %s, %s, 1, NULL, now(), now(), NULL)")
    client.execute(sql, (judge.pk, turn.pk, passage))


@pytest.mark.django_db(transaction=True)
def test_two_judges_grading_at_once_never_wait_for_each_other_and_a_delete_waits_for_a_grade_of_its_judge():
    turn = TurnFactory()
    alice, bob = JudgeFactory(), JudgeFactory()
    RelevanceJudgmentFactory(judge=alice, turn=turn, passage_id="old")
    with _client() as open_grade, _client(autocommit=True) as other:
        open_grade.execute("SET statement_timeout = '5s'")
        other.execute("SET statement_timeout = '2s'")
        _grade(open_grade, alice, turn, "new")  # uncommitted: alice's count stays locked

        _grade(other, bob, turn, "new")  # bob's grade in the same collection does not wait
        deleted = threading.Thread(
            target=lambda: other.execute(
                f"DELETE FROM {connection.ops.quote_name(RelevanceJudgment._meta.db_table)} "
                "WHERE judge_id = %s AND passage_id = 'old'",
                [alice.pk],
            )
        )
        deleted.start()
        time.sleep(0.3)
        assert deleted.is_alive()  # alice's old label's delete waits for her open grade...
        open_grade.commit()
        deleted.join()

    # ... and then takes its label off the count the grade left, not the count it read before.
    assert (
        kept()
        == counted()
        == {
            (turn.collection_id, "relevance", "", alice.pk): 1,
            (turn.collection_id, "relevance", "", bob.pk): 1,
        }
    )
