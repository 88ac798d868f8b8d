"""The one judge-name rule (annotation.judge_access, core.names) on the entry points that are neither a
command nor a job: the console's upload page and the API. A name a spreadsheet reads as a formula, or one
kept for the crowd's aggregates, is refused with its reason, and nothing is written."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Judge, RelevanceJudgment
from console.models import ImportJob
from tests.factories import CollectionFactory, JudgeFactory, OrganiserFactory, TurnFactory

pytestmark = pytest.mark.django_db

REFUSED = [
    ("=cmd", "which a spreadsheet reads as a formula"),
    ("+cmd", "which a spreadsheet reads as a formula"),
    ("-cmd", "which a spreadsheet reads as a formula"),
    ("@cmd", "which a spreadsheet reads as a formula"),
    ("crowd-majority", "is kept for crowd campaigns"),
]


@pytest.mark.parametrize(("name", "reason"), REFUSED)
def test_an_upload_refuses_a_judge_name_the_rule_refuses(client, name, reason):
    collection = CollectionFactory(name="camp")
    TurnFactory(topic__collection=collection, turn_id="1_1")
    client.force_login(OrganiserFactory())

    response = client.post(
        reverse("console-collection", args=[collection.name]),
        {"kind": "qrels", "file": SimpleUploadedFile("q.qrels", b"1_1 0 d1 2\n"), "judge": name},
        follow=True,
    )

    assert response.status_code == 200
    assert reason in response.content.decode()
    assert ImportJob.objects.get().status == ImportJob.Status.FAILED
    assert not Judge.objects.filter(name=name).exists()
    assert not RelevanceJudgment.objects.exists()


@pytest.mark.parametrize(("name", "reason"), REFUSED)
def test_the_api_refuses_to_write_as_a_judge_name_the_rule_refuses(name, reason):
    collection = CollectionFactory(name="camp")
    turn = TurnFactory(topic__collection=collection)
    api = APIClient()
    api.force_authenticate(OrganiserFactory())

    response = api.post(
        reverse("api-relevance", args=["camp"]),
        {"judge": name, "turn_id": turn.turn_id, "passage_id": "d1", "grade": 2},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert reason in response.json()["fields"]["judge"][0]
    assert not RelevanceJudgment.objects.exists()


def test_the_api_refuses_to_write_into_a_crowd_aggregates_labels():
    collection = CollectionFactory(name="camp")
    turn = TurnFactory(topic__collection=collection)
    JudgeFactory(name="crowd-majority", kind=Judge.Kind.CROWD)
    api = APIClient()
    api.force_authenticate(OrganiserFactory())

    response = api.post(
        reverse("api-relevance", args=["camp"]),
        {"judge": "crowd-majority", "turn_id": turn.turn_id, "passage_id": "d1", "grade": 2},
        format="json",
    )

    assert response.status_code == 400
    assert "is a crowd aggregate" in response.json()["fields"]["judge"][0]
    assert not RelevanceJudgment.objects.exists()
