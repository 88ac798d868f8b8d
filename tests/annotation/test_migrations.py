"""The migrations build the schema from an empty database, and data migrations carry existing rows over.

`make test` builds its test databases from the models (pytest --nomigrations: one statement per table
instead of every migration in turn, in each worker on each database); `makemigrations --check` keeps the
models and the migrations equal. These tests are where the migrations themselves run, from zero.
"""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotation", "0007_relevance_judgment_key_indexes")]
AFTER = [("annotation", "0008_work_slot_open_in_order")]

pytestmark = pytest.mark.django_db(transaction=True)


def _drop_every_table() -> None:
    tables = connection.introspection.table_names()
    quoted = ", ".join(connection.ops.quote_name(table) for table in tables)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {quoted} CASCADE")


def _migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture
def empty_database(settings):
    """No table at all, and the project's migrations in sight (--nomigrations hides them); the full
    schema is migrated back afterwards for the tests that follow."""
    settings.MIGRATION_MODULES = {}
    _drop_every_table()
    yield
    _migrate_to_latest()


def test_the_migrations_build_every_table_from_an_empty_database(empty_database):
    assert connection.introspection.table_names() == []

    _migrate_to_latest()

    missing = set(connection.introspection.django_table_names()) - set(connection.introspection.table_names())
    assert missing == set()
    executor = MigrationExecutor(connection)
    assert set(executor.loader.graph.nodes) - set(executor.recorder.applied_migrations()) == set()


def test_work_slots_get_their_units_assignment_and_position(empty_database):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    topic = old.get_model("annotation", "Topic").objects.create(
        collection=old.get_model("annotation", "Collection").objects.create(name="c"), number="1"
    )
    pool = old.get_model("annotation", "Pool").objects.create(
        collection_id=topic.collection_id, name="p", depth=10
    )
    assignment = old.get_model("annotation", "Assignment").objects.create(pool=pool, name="a")
    units = [
        old.get_model("annotation", "WorkUnit").objects.create(
            assignment=assignment, topic=topic, label=f"1_{i}", turn_pks=[], position=position
        )
        for i, position in enumerate([7, 3])
    ]
    slots = {
        old.get_model("annotation", "WorkSlot").objects.create(unit=unit, copy=copy).pk: unit.position
        for unit in units
        for copy in range(2)
    }

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    moved = new.get_model("annotation", "WorkSlot").objects.values_list("pk", "assignment_id", "position")

    assert {pk: (assignment_id, position) for pk, assignment_id, position in moved} == {
        pk: (assignment.pk, position) for pk, position in slots.items()
    }


def test_an_import_job_keeps_its_row_when_the_console_takes_it_over(empty_database):
    before = [("annotation", "0019_nugget_failed_labels")]
    after = [("console", "0001_initial")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    collection = old.get_model("annotation", "Collection").objects.create(name="c")
    job = old.get_model("annotation", "ImportJob").objects.create(
        collection=collection, kind="qrels", file_name="a.qrels", stored_path="/x/a.qrels", result=[{"n": 3}]
    )

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    moved = new.get_model("console", "ImportJob").objects.get()

    assert (moved.pk, moved.collection_id, moved.file_name, moved.result) == (
        job.pk,
        collection.pk,
        "a.qrels",
        [{"n": 3}],
    )
    assert "console_importjob" in connection.introspection.table_names()
    assert "annotation_importjob" not in connection.introspection.table_names()


BEFORE_TOPIC_WORK = [("annotation", "0021_run_report")]
AFTER_TOPIC_WORK = [("annotation", "0022_topic_work")]


def _old_work_rows(old):
    user = old.get_model("auth", "User").objects.create(username="alice")
    collection = old.get_model("annotation", "Collection").objects.create(name="c")
    topics = [
        old.get_model("annotation", "Topic").objects.create(collection=collection, number=n) for n in "12"
    ]
    judge = old.get_model("annotation", "Judge").objects.create(name="llm", kind="llm")
    support = old.get_model("annotation", "SupportAssignment").objects
    nuggets = old.get_model("annotation", "NuggetWork").objects
    supports = [
        support.create(
            topic=topics[0], user=user, condition="post-edit", machine_judge=judge, max_citations=2
        ),
        support.create(topic=topics[1], user=user, condition="blind", units=[[7, 0], [8, 1]]),
    ]
    work = nuggets.create(
        topic=topics[0],
        user=user,
        step="importance",
        condition="post-edit",
        source_judge=judge,
        machine_judge=judge,
        time_spent_ms=1234,
    )
    nuggets.filter(pk=work.pk).update(started_at=work.created_at, completed_at=work.created_at)
    nuggets.create(topic=topics[1], user=user, step="edit", source_judge=judge)
    return user, topics, judge, supports


def test_support_assignments_and_nugget_work_become_topic_work(empty_database):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_TOPIC_WORK)
    old = executor.loader.project_state(BEFORE_TOPIC_WORK).apps
    user, topics, judge, supports = _old_work_rows(old)

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER_TOPIC_WORK)
    new = executor.loader.project_state(AFTER_TOPIC_WORK).apps
    work = new.get_model("annotation", "TopicWork").objects
    fields = (
        "topic_id",
        "user_id",
        "kind",
        "condition",
        "source_judge_id",
        "machine_judge_id",
        "max_citations",
        "units",
        "time_spent_ms",
    )

    assert list(work.filter(kind="support").order_by("pk").values_list("pk", *fields)) == [
        (supports[0].pk, topics[0].pk, user.pk, "support", "post-edit", None, judge.pk, 2, [], 0),
        (supports[1].pk, topics[1].pk, user.pk, "support", "blind", None, None, 1, [[7, 0], [8, 1]], 0),
    ]
    assert list(work.exclude(kind="support").order_by("pk").values_list(*fields)) == [
        (topics[0].pk, user.pk, "nugget-importance", "post-edit", judge.pk, judge.pk, 1, [], 1234),
        (topics[1].pk, user.pk, "nugget-edit", "scratch", judge.pk, None, 1, [], 0),
    ]
    finished = work.get(kind="nugget-importance")
    assert finished.started_at is not None and finished.completed_at is not None
    # New work after the copied rows takes a fresh id.
    other = new.get_model("annotation", "Topic").objects.create(
        collection_id=topics[0].collection_id, number="3"
    )
    fresh = work.create(topic_id=other.pk, user_id=user.pk, kind="support")
    assert fresh.pk > max(work.exclude(pk=fresh.pk).values_list("pk", flat=True))


def test_topic_work_goes_back_to_support_assignments_and_nugget_work(empty_database):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_TOPIC_WORK)
    old = executor.loader.project_state(BEFORE_TOPIC_WORK).apps
    user, topics, judge, supports = _old_work_rows(old)
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER_TOPIC_WORK)

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_TOPIC_WORK)
    back = executor.loader.project_state(BEFORE_TOPIC_WORK).apps

    support = back.get_model("annotation", "SupportAssignment").objects.order_by("pk")
    assert list(support.values_list("pk", "condition", "machine_judge_id", "max_citations", "units")) == [
        (supports[0].pk, "post-edit", judge.pk, 2, []),
        (supports[1].pk, "blind", None, 1, [[7, 0], [8, 1]]),
    ]
    nuggets = back.get_model("annotation", "NuggetWork").objects.order_by("topic__number")
    assert list(nuggets.values_list("topic_id", "step", "condition", "time_spent_ms")) == [
        (topics[0].pk, "importance", "post-edit", 1234),
        (topics[1].pk, "edit", "scratch", 0),
    ]
