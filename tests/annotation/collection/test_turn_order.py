"""Turns are listed as people read them, by topic number and then turn number: 2_2 before 2_10 before
10_1, whatever order the topics were imported in and however the ids sort as text."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import Turn
from annotation.relevance.assignments import AssignmentFailed, assignment_create
from annotation.selectors import TOPICS_PER_PAGE, turn_key, turns_in_reading_order
from crowd.forms import CampaignComposeForm
from judging.models import JudgeJob
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    PoolEntryFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db

READING_ORDER = ["1_1", "2_2", "2_10", "10_1"]


@pytest.fixture
def collection():
    """Topic 10 imported first, then 2, then 1: neither creation order nor text order is reading order."""
    collection = CollectionFactory(name="ordered")
    for number, positions in [("10", [1]), ("2", [10, 2]), ("1", [1])]:
        topic = TopicFactory(collection=collection, number=number)
        for position in positions:
            TurnFactory(topic=topic, position=position)
    return collection


def test_it_keys_turn_ids_by_topic_then_turn_number():
    class Row:
        def __init__(self, turn_id: str) -> None:
            self.turn_id = turn_id

    rows = [Row(t) for t in ["10_1", "2_10", "1_1", "2_2"]]

    assert [r.turn_id for r in sorted(rows, key=turn_key)] == READING_ORDER


def test_it_lists_the_nugget_turns_in_reading_order(client, collection):
    client.force_login(OrganiserFactory())

    response = client.get(reverse("nuggets-turns", args=[collection.name]))

    assert response.status_code == 200
    assert [row.turn.turn_id for row in response.context["rows"]] == READING_ORDER
    links = re.findall(rf'href="/nuggets/{collection.name}/([0-9_]+)/"', response.content.decode())
    assert links == READING_ORDER


def test_it_lists_the_collections_topics_in_reading_order(client, collection):
    client.force_login(OrganiserFactory())

    response = client.get(reverse("collection-detail", args=[collection.name]))

    assert response.status_code == 200
    assert [topic.number for topic in response.context["topics"]] == ["1", "2", "10"]
    shown = re.findall(r"<li><code>([0-9_]+)</code>", response.content.decode())
    assert shown == READING_ORDER


def test_a_crowd_campaign_takes_the_turns_named_in_reading_order(client, collection):
    client.force_login(OrganiserFactory())
    form = CampaignComposeForm({"turns": "10_1 2_10\n1_1 2_2"}, collection=collection)
    form.is_valid()

    assert [turn.turn_id for turn in form.cleaned_data["turns"]] == READING_ORDER


def test_it_shows_the_turns_of_a_job_in_reading_order(client, collection):
    job = JudgeJob.objects.create(
        collection=collection,
        judge=JudgeFactory(name="gpt-4o", kind="llm"),
        task="relevance",
        model="gpt-4o",
        prompt_version="relevance_v1",
        status="done",
        options={"turns": sorted(READING_ORDER)},
    )
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:job-detail", args=[job.pk]))

    assert response.status_code == 200
    assert "<dt>turns</dt><dd>1_1, 2_2, 2_10, 10_1</dd>" in response.content.decode()
    job.refresh_from_db()
    assert job.options == {
        "turns": ["10_1", "1_1", "2_10", "2_2"]
    }  # stored as started: resuming still matches


def test_it_names_turns_missing_from_a_pool_in_reading_order(collection):
    pool = PoolEntryFactory(pool__collection=collection, turn=collection.turns.get(turn_id="1_1")).pool

    with pytest.raises(AssignmentFailed) as failure:
        assignment_create(
            pool=pool, name="a", assessors=[OrganiserFactory()], turn_ids=["10_1", "2_10", "2_2", "1_1"]
        )

    assert str(failure.value) == f"turns not in pool {pool.name}: 2_2, 2_10, 10_1"


def test_it_lists_the_conversations_a_page_at_a_time_in_reading_order(client):
    collection = CollectionFactory(name="many")
    for number in range(TOPICS_PER_PAGE + 5, 0, -1):
        TurnFactory(topic=TopicFactory(collection=collection, number=str(number)), position=1)
    client.force_login(OrganiserFactory())
    url = reverse("collection-detail", args=[collection.name])

    first = client.get(url)
    last = client.get(url, {"page": 2})

    assert [t.number for t in first.context["topics"]] == [str(n) for n in range(1, TOPICS_PER_PAGE + 1)]
    assert [t.number for t in last.context["topics"]] == [
        str(n) for n in range(TOPICS_PER_PAGE + 1, TOPICS_PER_PAGE + 6)
    ]
    page = first.content.decode()
    assert f"Conversations 1–{TOPICS_PER_PAGE} of {TOPICS_PER_PAGE + 5}, page 1 of 2" in page
    assert 'href="?page=2#conversations" rel="next"' in page
    assert page.count("<code>") == TOPICS_PER_PAGE


def test_the_database_orders_turns_by_the_reading_order_every_orm_write_keeps(collection):
    """The kept reading order follows the turn id through create (the factories above), bulk_create (the
    importers) and save (the admin), so the database alone reads turns in reading order."""
    topic = TopicFactory(collection=collection, number="3")
    Turn.objects.bulk_create(
        [
            Turn(collection=collection, topic=topic, turn_id="3_12", position=12, utterance="q"),
            Turn(collection=collection, topic=topic, turn_id="3_9", position=9, utterance="q"),
        ]
    )
    renamed = collection.turns.get(turn_id="10_1")
    renamed.turn_id = "0_1"
    renamed.save()

    ordered = turns_in_reading_order(collection=collection).values_list("turn_id", flat=True)

    assert list(ordered) == ["0_1", "1_1", "2_2", "2_10", "3_9", "3_12"]
