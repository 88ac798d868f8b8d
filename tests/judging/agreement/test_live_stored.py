"""The live agreement's JSON reads a stored report: the first poll has no figures yet (current false),
the next the figures the in-request code gives; after a new label, the earlier figures marked not current
until the worker has computed the new ones."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judging.agreement.reports import live_agreement
from tests.background import tasks_run_ready
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


def test_the_live_json_reads_the_stored_figures_and_marks_older_ones(client):
    collection = CollectionFactory()
    turn = TurnFactory(topic__collection=collection)
    llm, assessor = JudgeFactory(kind="llm"), AssessorJudgeFactory()
    for i in range(4):
        RelevanceJudgmentFactory(judge=llm, turn=turn, passage_id=f"p{i}", grade=i % 2)
        RelevanceJudgmentFactory(judge=assessor, turn=turn, passage_id=f"p{i}", grade=1)
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-live-data", args=[collection.name])

    first = client.get(url).json()
    assert first["current"] is False and first["assessors"] == []
    tasks_run_ready()
    second = client.get(url).json()
    expected = live_agreement(collection=collection, task="relevance")
    assert second["current"] is True and second["assessors"] == expected["assessors"]
    RelevanceJudgmentFactory(judge=assessor, turn=turn, passage_id="p9", grade=1)
    third = client.get(url).json()
    assert third["current"] is False and third["assessors"][0]["labels"] == 4
    tasks_run_ready()
    assert client.get(url).json()["assessors"][0]["labels"] == 5
