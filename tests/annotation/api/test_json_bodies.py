"""Every endpoint that reads a JSON body refuses what the database or the interpreter cannot take with a
4xx and a short reason, never a 500: deep nesting, NUL characters, non-finite numbers, oversized bodies."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.models import Nugget, NuggetEdit, RelevanceJudgment, SupportJudgment
from annotation.rag_nuggets.services import nugget_work_assign
from tests.annotation.rag_nuggets.data import rag_topic
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
    relevance_campaign,
)

pytestmark = pytest.mark.django_db


@dataclass
class Endpoint:
    client: Client
    url: str
    valid: dict[str, Any]
    text_field: str  # a string the endpoint stores or looks up
    number_field: str  # a number it expects
    reason_key: str  # where its refusals put the reason


def _relevance_api(client: Client) -> Endpoint:
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.create(user=alice).key}"
    step = client.post(reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json")
    valid = {"turn_pk": step.json()["turn_pk"], "passage_id": step.json()["passage_id"], "grade": 2}
    url = reverse("relevance-api-grade", args=[step.json()["slot"]])
    return Endpoint(client, url, {**valid, "time_spent_ms": 1200}, "passage_id", "time_spent_ms", "detail")


def _nuggets(client: Client) -> Endpoint:
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    passage = PassageFactory(collection=collection, text="Knobby tyres grip mud.")
    RelevanceJudgmentFactory(judge=JudgeFactory(), turn=turn, passage_id=passage.passage_id, grade=3)
    client.force_login(UserFactory())
    url = reverse("nuggets-create", args=[collection.name, turn.turn_id])
    valid = {"passage_id": passage.passage_id, "start": 0, "end": 6, "text": "Knobby"}
    return Endpoint(client, url, valid, "text", "end", "detail")


def _drf_relevance(client: Client) -> Endpoint:
    collection = CollectionFactory(name="c1")
    TurnFactory(topic=TopicFactory(collection=collection, number="7"), position=1)
    client.force_login(OrganiserFactory())
    url = "/api/collections/c1/judgments/relevance/"
    valid = {"turn_id": "7_1", "passage_id": "d1", "grade": 3, "time_spent_ms": 1200}
    return Endpoint(client, url, valid, "passage_id", "time_spent_ms", "detail")


def _drf_support(client: Client) -> Endpoint:
    CollectionFactory(name="rag24")
    client.force_login(UserFactory())
    url = reverse("api-support", args=["rag24"])
    valid = {"run_id": "rag-a", "topic_id": "2024-1", "sentence_index": 0, "label": "FS"}
    return Endpoint(client, url, valid, "run_id", "sentence_index", "detail")


def _rag_nugget_edit(client: Client) -> Endpoint:
    data = rag_topic()
    work = nugget_work_assign(
        topic=data.topic, user=UserFactory(), step="edit", source_judge=data.llm, condition="scratch"
    )
    client.force_login(work.user)
    url = reverse("rag-nuggets-edit", args=[work.id, 1])
    valid = {"action": "rewrite", "key": "1", "text": "Bees fan nectar", "time_spent_ms": 1200}
    return Endpoint(client, url, valid, "text", "time_spent_ms", "detail")


ENDPOINTS = {"relevance-api": _relevance_api, "nuggets": _nuggets, "api-relevance": _drf_relevance}
ENDPOINTS["api-support"] = _drf_support
ENDPOINTS["rag-nuggets-edit"] = _rag_nugget_edit


def _nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _number(endpoint: Endpoint, literal: str) -> str:
    marker = 987654321
    return json.dumps({**endpoint.valid, endpoint.number_field: marker}).replace(str(marker), literal)


BAD_BODIES = {
    "100000 nested lists": (lambda e: "[" * 100_000 + "]" * 100_000, "nested deeper"),
    "40 nested lists in a field": (lambda e: json.dumps({**e.valid, "extra": _nested(40)}), "nested deeper"),
    "NUL in a string": (
        lambda e: json.dumps({**e.valid, e.text_field: e.valid[e.text_field] + "\u0000"}),
        "NUL",
    ),
    "NUL in a key": (lambda e: json.dumps({**e.valid, "a\u0000": 1}), "NUL"),
    "a lone surrogate": (lambda e: json.dumps({**e.valid, e.text_field: "\ud800"}), "surrogate"),
    "NaN": (lambda e: _number(e, "NaN"), "NaN"),
    "Infinity": (lambda e: _number(e, "Infinity"), "Infinity"),
    "-Infinity": (lambda e: _number(e, "-Infinity"), "Infinity"),
    "1e400": (lambda e: _number(e, "1e400"), "out of range"),
}


def _rows() -> tuple[int, int, int, int]:
    return (
        RelevanceJudgment.objects.count(),
        Nugget.objects.count(),
        SupportJudgment.objects.count(),
        NuggetEdit.objects.count(),
    )


@pytest.mark.parametrize("make", ENDPOINTS.values(), ids=ENDPOINTS.keys())
@pytest.mark.parametrize("case", BAD_BODIES.keys())
def test_it_refuses_a_body_the_database_cannot_take_with_400_and_the_reason(client, make, case):
    endpoint = make(client)
    body, reason = BAD_BODIES[case]
    before = _rows()

    response = endpoint.client.post(endpoint.url, body(endpoint), content_type="application/json")

    assert response.status_code == 400, response.content[:300]
    assert reason in str(response.json()[endpoint.reason_key])
    assert _rows() == before


@pytest.mark.parametrize("make", ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_it_refuses_a_body_over_the_upload_limit_with_413(client, settings, make):
    endpoint = make(client)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    before = _rows()
    body = json.dumps({**endpoint.valid, "padding": "x" * 2000})

    response = endpoint.client.post(endpoint.url, body, content_type="application/json")

    assert response.status_code == 413
    assert "larger than 2000 bytes" in str(response.json()[endpoint.reason_key])
    assert _rows() == before


def test_the_valid_bodies_above_are_accepted(client):
    # The bad bodies differ from these by one spoilt value: these must pass for the refusals to mean it.
    relevance = _relevance_api(Client())
    nuggets = _nuggets(Client())
    organiser = _drf_relevance(Client())

    for endpoint in (relevance, nuggets, organiser):
        response = endpoint.client.post(
            endpoint.url, json.dumps(endpoint.valid), content_type="application/json"
        )
        assert response.status_code == 201, response.content[:300]

    assert RelevanceJudgment.objects.count() == 3  # the nugget page's grade, and the two posted
    assert Nugget.objects.count() == 1
    edit = _rag_nugget_edit(Client())
    response = edit.client.post(edit.url, json.dumps(edit.valid), content_type="application/json")
    assert response.status_code == 200, response.content[:300]
    assert NuggetEdit.objects.count() == 1
