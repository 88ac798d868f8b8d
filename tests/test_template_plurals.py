"""Counts on pages agree with their noun: "1 run", "2 runs", never "1 runs"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from tests.factories import (
    CollectionFactory,
    OrganiserFactory,
    PassageFactory,
    PoolFactory,
    RunFactory,
    TurnFactory,
)

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

# The nouns pages count, singular and plural.
NOUNS = (
    "assignment|batch|call|judgment|label|minute|nugget|pair|passage|pool|question|resample|run|sample|second"
    "|sentence|test|topic|turn|unit|vote|worker"
)
# A printed value followed by a counted noun that no `pluralize` right after it agrees with.
COUNTED = re.compile(
    r"\{\{\s*(?P<value>[^}]+?)\s*\}\}(?:\s*/\s*\{\{\s*(?P<total>[^}]+?)\s*\}\})?\s+(?P<noun>(?:"
    + NOUNS
    + r")(?:e?s)?)\b(?!\{\{[^}]*pluralize)"
)
# Printed values that are names, not counts ("relevance labels", "conversation units").
NOT_COUNTS = {
    "report.task",
    "row.assignment.get_unit_kind_display|lower",
    "run.name",
}  # run.name: "bm25 nugget scores"


def _unpluralised() -> list[str]:
    found = []
    for path in sorted(TEMPLATES.rglob("*.html")):
        text = path.read_text()
        for match in COUNTED.finditer(text):
            if match["value"] in NOT_COUNTS:
                continue
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(TEMPLATES)}:{line}: {match[0]}")
    return found


def test_it_pluralises_every_counted_noun_in_the_templates():
    assert _unpluralised() == []


def test_the_check_finds_a_count_printed_with_a_fixed_noun():
    assert COUNTED.search("({{ collection.n_runs }} runs)")
    assert COUNTED.search("{{ job.units_done }}/{{ job.units_total }} turns")
    assert not COUNTED.search("{{ n }} run{{ n|pluralize }}")
    assert not COUNTED.search("{{ n }} batch{{ n|pluralize:'es' }}")


@pytest.mark.django_db
def test_it_counts_one_of_each_in_the_singular_on_the_collection_page(client):
    collection = CollectionFactory(name="tiny")
    TurnFactory(topic__collection=collection)
    PassageFactory(collection=collection)
    RunFactory(collection=collection)
    PoolFactory(collection=collection)
    client.force_login(OrganiserFactory())

    response = client.get(reverse("console-collection", args=[collection.name]))

    assert response.status_code == 200
    counts = re.search(r'<p id="collection-counts">(.*?)</p>', response.content.decode())
    assert counts is not None
    assert counts[1] == "1 topic · 1 turn · 1 passage · 1 run · 1 pool"
