"""Data migrations carry existing rows over."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotation", "0007_relevance_judgment_key_indexes")]
AFTER = [("annotation", "0008_work_slot_open_in_order")]


@pytest.fixture
def back_to_latest():
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_work_slots_get_their_units_assignment_and_position(back_to_latest):
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
