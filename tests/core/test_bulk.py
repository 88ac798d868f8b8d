"""core.bulk: rows written by one COPY, and many ids named by one array parameter."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from annotation.models import Passage
from core.bulk import in_array, model_rows_copy, statistics_refresh
from core.revisions import revisions_read
from tests.factories import CollectionFactory, PassageFactory

pytestmark = pytest.mark.django_db


def test_a_copy_writes_each_row_and_says_how_many():
    collection = CollectionFactory()
    rows = [(collection.pk, f"p{k}", "", f"text {k}\twith a tab\\ and a backslash") for k in range(3)]

    written = model_rows_copy(Passage, columns=("collection_id", "passage_id", "title", "text"), rows=rows)

    assert written == 3
    assert list(collection.passages.order_by("passage_id").values_list("passage_id", "text")) == [
        (f"p{k}", f"text {k}\twith a tab\\ and a backslash") for k in range(3)
    ]


def test_a_copy_counts_as_one_write_in_the_tables_revision():
    collection = CollectionFactory()
    before = revisions_read(models=[Passage])[Passage._meta.db_table]

    model_rows_copy(
        Passage,
        columns=("collection_id", "passage_id", "title", "text"),
        rows=[(collection.pk, f"p{k}", "", "text") for k in range(5)],
    )

    assert revisions_read(models=[Passage])[Passage._meta.db_table] == before + 1


def test_a_row_the_table_refuses_raises_djangos_integrity_error():
    passage = PassageFactory()

    with pytest.raises(IntegrityError), transaction.atomic():
        model_rows_copy(
            Passage,
            columns=("collection_id", "passage_id", "title", "text"),
            rows=[(passage.collection_id, passage.passage_id, "", "again")],
        )


def test_in_array_names_the_same_rows_as_a_list_of_ids():
    passages = [PassageFactory() for _ in range(4)]
    wanted = [passages[0].pk, passages[2].pk, passages[3].pk]

    assert sorted(Passage.objects.filter(pk__in=in_array(wanted)).values_list("pk", flat=True)) == wanted
    assert not Passage.objects.filter(pk__in=in_array([])).exists()
    assert list(
        Passage.objects.filter(passage_id__in=in_array([passages[1].passage_id], "text")).values_list(
            "pk", flat=True
        )
    ) == [passages[1].pk]


def planner_rows(model) -> float:
    """The row count PostgreSQL's planner holds for the model's table (set by ANALYZE)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [model._meta.db_table])
        return cursor.fetchone()[0]


def test_statistics_refresh_tells_the_planner_of_rows_just_written():
    # The rows are this test's, uncommitted: no autovacuum pass can have counted them.
    collection = CollectionFactory()
    model_rows_copy(
        Passage,
        columns=("collection_id", "passage_id", "title", "text"),
        rows=[(collection.pk, f"p{k}", "", "text") for k in range(173)],
    )

    statistics_refresh([Passage])

    assert planner_rows(Passage) == Passage.objects.count()
