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
