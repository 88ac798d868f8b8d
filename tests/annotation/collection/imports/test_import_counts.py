"""Imports count each kind of record apart: a topics file is topics, turns and PTKB statements, not one sum."""

import io
import json

import pytest
from django.core.management import call_command

from annotation.collection.io import topics_import
from annotation.services import ImportResult, collection_get_or_create

pytestmark = pytest.mark.django_db

TOPICS = [
    {
        "number": "1",
        "title": "Moving abroad",
        "ptkb": {"1": "I live in Lyon.", "2": "I am vegetarian."},
        "turns": [{"turn_id": 1, "utterance": "Where to live?"}, {"turn_id": 2, "utterance": "And eat?"}],
    }
]


def test_it_counts_topics_turns_and_statements_apart(tmp_path):
    path = tmp_path / "topics.json"
    path.write_text(json.dumps(TOPICS), encoding="utf-8")
    collection = collection_get_or_create(name="counts")

    first = topics_import(path=path, collection=collection)
    again = topics_import(path=path, collection=collection)

    assert {kind: counts.created for kind, counts in first.by_kind().items()} == {
        "topics": 1,
        "turns": 2,
        "PTKB statements": 2,
    }
    assert str(first) == (
        "topics: 1 created, 0 updated, 0 unchanged; turns: 2 created, 0 updated, 0 unchanged; "
        "PTKB statements: 2 created, 0 updated, 0 unchanged"
    )
    assert (again.created, again.unchanged) == (0, 5)
    assert again.by_kind()["turns"].unchanged == 2


def test_a_result_counted_only_in_totals_reports_them_under_the_default_kind():
    result = ImportResult(created=3, unchanged=1)

    assert str(result) == "3 created, 0 updated, 1 unchanged"
    assert {k: (c.created, c.unchanged) for k, c in result.by_kind("labels").items()} == {"labels": (3, 1)}


def test_import_ikat_says_17_topics_not_523(shared_data):
    out = io.StringIO()
    call_command("import_ikat", year="2024", source=str(shared_data / "ikat2024"), stdout=out)

    assert "topics: 17 created" in out.getvalue()
    assert "turns: 218 created" in out.getvalue()
    assert "PTKB statements: 288 created" in out.getvalue()
    assert "523" not in out.getvalue()
