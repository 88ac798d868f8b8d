"""The four span endpoints of the gold nugget page (create, move, delete, mark a duplicate): DRF views in the
API's schema (tests/test_page_api_schema.py), each reached only by the nugget's assessor, each body read
by the strict reader, every refusal in the API's one error shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Nugget, Turn
from annotation.services import judge_for_assessor
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

TEXT = "Knobby tyres grip mud."


@dataclass
class World:
    turn: Turn
    passage_id: str
    nugget: Nugget  # alice's
    other: Nugget  # alice's too, to mark the first a duplicate of
    alice: Any
    bobs_judge_pk: int


@pytest.fixture
def world() -> World:
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    passage = PassageFactory(collection=collection, text=TEXT)
    alice = UserFactory(username="alice")
    bob = judge_for_assessor(user=UserFactory(username="bob"))
    RelevanceJudgmentFactory(judge=bob, turn=turn, passage_id=passage.passage_id, grade=3)
    mine = judge_for_assessor(user=alice)
    nuggets = [
        NuggetFactory(
            judge=mine, turn=turn, passage_id=passage.passage_id, start=0, end=6, text="Knobby", key=k
        )
        for k in ("[1]", "[2]")
    ]
    return World(turn, passage.passage_id, nuggets[0], nuggets[1], alice, bob.pk)


def _args(w: World) -> list[Any]:
    return [w.turn.collection.name, w.turn.turn_id]


# Each endpoint's URL for the world's first nugget (or its turn), and a body it accepts.
Case = tuple[str, dict[str, Any]]
CASES: dict[str, Callable[[World], Case]] = {
    "nuggets-create": lambda w: (
        reverse("nuggets-create", args=_args(w)),
        {"passage_id": w.passage_id, "start": 7, "end": 12, "text": "tyres"},
    ),
    "nuggets-update": lambda w: (
        reverse("nuggets-update", args=[*_args(w), w.nugget.pk]),
        {"start": 0, "end": 12, "text": "Knobby tyres"},
    ),
    "nuggets-delete": lambda w: (reverse("nuggets-delete", args=[*_args(w), w.nugget.pk]), {}),
    "nuggets-duplicate": lambda w: (
        reverse("nuggets-duplicate", args=[*_args(w), w.nugget.pk]),
        {"duplicate_of": w.other.pk},
    ),
}
OK = {"nuggets-create": 201, "nuggets-update": 200, "nuggets-delete": 200, "nuggets-duplicate": 200}


def _state() -> list[tuple[Any, ...]]:
    return list(Nugget.objects.order_by("pk").values_list("pk", "start", "end", "text", "duplicate_of"))


def _post(client: Client, url: str, body: Any):
    return client.post(
        url, body if isinstance(body, str) else json.dumps(body), content_type="application/json"
    )


@pytest.mark.parametrize("name", CASES)
def test_it_refuses_anonymous_visitors_in_the_error_shape(client, world, name):
    url, body = CASES[name](world)
    before = _state()

    response = _post(client, url, body)

    assert response.status_code == 403
    assert response.json()["code"] == "not_authenticated"
    assert _state() == before


@pytest.mark.parametrize("name", ["nuggets-update", "nuggets-delete", "nuggets-duplicate"])
def test_it_validates_ownership_another_assessors_nugget_is_not_found(client, world, name):
    url, body = CASES[name](world)
    client.force_login(UserFactory(username="mallory"))
    before = _state()

    response = _post(client, url, body)

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert _state() == before


def test_a_span_naming_another_assessors_relevance_judge_is_forbidden(client, world):
    url, body = CASES["nuggets-create"](world)
    client.force_login(world.alice)
    before = _state()

    response = _post(client, url, {**body, "relevance_judge": world.bobs_judge_pk})

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert _state() == before


@pytest.mark.parametrize("name", CASES)
def test_the_nuggets_assessor_changes_it(client, world, name):
    url, body = CASES[name](world)
    client.force_login(world.alice)

    response = _post(client, url, body)

    assert response.status_code == OK[name], response.content[:300]
    if name == "nuggets-create":
        assert response.json()["nugget"]["text"] == "tyres"
        assert Nugget.objects.filter(judge__user=world.alice, text="tyres").exists()
    elif name == "nuggets-update":
        assert response.json()["nugget"] == {
            "id": world.nugget.pk,
            "key": "[1]",
            "text": "Knobby tyres",
            "passage_id": world.passage_id,
            "start": 0,
            "end": 12,
            "relevance": "",
            "duplicate_of": None,
        }
        assert Nugget.objects.get(pk=world.nugget.pk).text == "Knobby tyres"
    elif name == "nuggets-delete":
        assert response.json() == {"deleted": world.nugget.pk, "changed": []}
        assert not Nugget.objects.filter(pk=world.nugget.pk).exists()
    else:
        assert [n["duplicate_of"] for n in response.json()["changed"]] == [world.other.pk]
        assert Nugget.objects.get(pk=world.nugget.pk).duplicate_of_id == world.other.pk


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


BAD_BODIES = {
    "a NUL character": (lambda body: json.dumps({**body, "a\u0000": 1}), "NUL"),
    "a lone surrogate": (lambda body: json.dumps({**body, "\ud800": 1}), "surrogate"),
    "990 nested lists": (lambda body: _nested(990), "nested deeper"),
    "40 nested lists in a field": (
        lambda body: json.dumps({**body, "x": json.loads(_nested(40))}),
        "nested deeper",
    ),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("case", BAD_BODIES)
def test_it_refuses_a_body_it_cannot_read_with_400_in_the_error_shape(client, world, name, case):
    url, body = CASES[name](world)
    spoil, reason = BAD_BODIES[case]
    client.force_login(world.alice)
    before = _state()

    response = _post(client, url, spoil(body))

    assert response.status_code == 400, response.content[:300]
    assert response.json()["code"] == "parse_error"
    assert reason in response.json()["detail"]
    assert _state() == before


def test_a_relevance_judge_that_is_not_there_is_refused_by_field(client, world):
    url, body = CASES["nuggets-create"](world)
    client.force_login(world.alice)

    response = _post(client, url, {**body, "relevance_judge": JudgeFactory().pk + 1000})

    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["relevance_judge"]
    assert not Nugget.objects.filter(text="tyres").exists()


@pytest.mark.parametrize("name", CASES)
def test_a_session_post_without_the_csrf_token_is_refused(world, name):
    url, body = CASES[name](world)
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.alice)
    before = _state()

    response = _post(client, url, body)

    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert _state() == before


@pytest.mark.parametrize(
    ("name", "field"), [("nuggets-create", "relevance_judge"), ("nuggets-duplicate", "duplicate_of")]
)
def test_an_id_past_the_databases_integers_is_refused_by_field(client, world, name, field):
    url, body = CASES[name](world)
    client.force_login(world.alice)
    before = _state()

    response = _post(client, url, {**body, field: 10**30})

    assert response.status_code == 400, response.content[:300]
    assert list(response.json()["fields"]) == [field]
    assert _state() == before
