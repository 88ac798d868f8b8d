"""Each collection's passage count, kept by PostgreSQL with the passages: true after every kind of write,
rebuilt when its triggers are (re)installed, and what the pages listing collections show."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.urls import reverse

from annotation.collection.io import passages_import
from annotation.collection.passage_count import PREFIX, passage_count_install
from annotation.models import Passage, PassageCount
from annotation.selectors import collection_counts
from tests.factories import CollectionFactory, OrganiserFactory, PassageFactory

pytestmark = pytest.mark.django_db


def _kept() -> dict[int, int]:
    return dict(PassageCount.objects.values_list("collection_id", "passages"))


def _counted() -> dict[int, int]:
    counts: dict[int, int] = {}
    for collection_id in Passage.objects.values_list("collection_id", flat=True):
        counts[collection_id] = counts.get(collection_id, 0) + 1
    return counts


def _jsonl(tmp_path, name: str, ids: list[str]):
    path = tmp_path / name
    path.write_text("".join(json.dumps({"id": pid, "text": f"text of {pid}"}) + "\n" for pid in ids))
    return path


def test_it_counts_what_the_import_adds_and_not_what_it_only_updates(tmp_path):
    first, second = CollectionFactory(), CollectionFactory()
    passages_import(path=_jsonl(tmp_path, "a.jsonl", ["a", "b", "c"]), collection=first)
    passages_import(path=_jsonl(tmp_path, "b.jsonl", ["a", "z"]), collection=second)

    # The same file again with one passage more and one text changed: one passage added.
    again = tmp_path / "again.jsonl"
    again.write_text(
        "".join(
            json.dumps({"id": pid, "text": "new" if pid == "a" else f"text of {pid}"}) + "\n"
            for pid in "abcd"
        )
    )
    passages_import(path=again, collection=first)

    assert _kept() == {first.pk: 4, second.pk: 2} == _counted()


def test_it_follows_every_writer_and_deletes():
    collection = CollectionFactory()
    PassageFactory.create_batch(3, collection=collection)
    Passage.objects.bulk_create(
        [Passage(collection=collection, passage_id=f"bulk-{k}", text="t") for k in range(4)]
    )

    Passage.objects.filter(passage_id__startswith="bulk-").exclude(passage_id="bulk-0").delete()

    assert _kept() == {collection.pk: 4} == _counted()


def test_deleting_a_collection_leaves_no_count():
    collection, other = CollectionFactory(), CollectionFactory()
    PassageFactory.create_batch(2, collection=collection)
    PassageFactory(collection=other)

    collection.delete()

    assert _kept() == {other.pk: 1}


def test_installing_the_triggers_again_counts_every_collection_afresh():
    collection = CollectionFactory()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER {PREFIX}_insert ON {Passage._meta.db_table}")
    PassageFactory.create_batch(2, collection=collection)
    assert _kept() == {}

    assert passage_count_install() is True

    assert _kept() == {collection.pk: 2}
    assert passage_count_install() is False  # in place: nothing to do
    PassageFactory(collection=collection)
    assert _kept() == {collection.pk: 3}


def test_the_pages_listing_collections_show_the_kept_count(client):
    collection = CollectionFactory()
    PassageFactory.create_batch(3, collection=collection)
    client.force_login(OrganiserFactory())

    response = client.get(reverse("console-collection", args=[collection.name]))

    assert collection_counts(collection_ids=[collection.pk])[collection.pk]["passages"] == 3
    assert "3 passages" in response.content.decode()
