"""Whose grades an assessor may read: the nugget pages' relevance judge and the API's judge list.

Assessors choose among machine (LLM, NLI) and imported-file judges and their own; never another assessor's
or a crowd aggregate. Organisers choose any. Every request that names a judge is checked, pages and posts.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Judge, Nugget
from annotation.services import judge_for_assessor
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

TEXT = "Knobby tyres grip mud."


@pytest.fixture
def world():
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    passage = PassageFactory(collection=collection, text=TEXT)
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    judges = {
        "qrels": JudgeFactory(name="nist-qrels", kind=Judge.Kind.IMPORTED),
        "llm": JudgeFactory(name="gpt-4o", kind=Judge.Kind.LLM),
        "crowd": JudgeFactory(name="mturk-majority", kind=Judge.Kind.CROWD),
        "alice": judge_for_assessor(user=alice),
        "bob": judge_for_assessor(user=bob),
    }
    for grade, judge in enumerate(judges.values()):
        RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=passage.passage_id, grade=grade)
    return turn, passage, alice, judges


def turn_url(turn):
    return reverse("nuggets-turn", args=[turn.collection.name, turn.turn_id])


def turns_url(turn):
    return reverse("nuggets-turns", args=[turn.collection.name])


def create(client, turn, passage, relevance_judge):
    body = {"passage_id": passage.passage_id, "start": 0, "end": 6, "text": TEXT[:6]}
    body["relevance_judge"] = relevance_judge
    return client.post(
        reverse("nuggets-create", args=[turn.collection.name, turn.turn_id]),
        data=json.dumps(body),
        content_type="application/json",
    )


def test_the_chooser_offers_an_assessor_machine_and_file_judges_and_their_own(client, world):
    turn, _passage, alice, judges = world
    client.force_login(alice)

    page = client.get(turns_url(turn))

    assert page.status_code == 200
    offered = set(page.context["form"].fields["judge"].queryset.values_list("name", flat=True))
    assert offered == {"nist-qrels", "gpt-4o", "assessor:alice"}
    assert "assessor:bob" not in page.content.decode()
    assert "mturk-majority" not in page.content.decode()


@pytest.mark.parametrize("min_grade", range(5))
@pytest.mark.parametrize("who", ["bob", "crowd"])
def test_an_assessor_cannot_read_another_assessors_or_the_crowds_grades(client, world, who, min_grade):
    turn, _passage, alice, judges = world
    client.force_login(alice)
    query = {"judge": judges[who].pk, "min_grade": min_grade}

    pages = [client.get(turn_url(turn), query), client.get(turns_url(turn), query)]

    assert [p.status_code for p in pages] == [403, 403]
    assert all("machine (LLM, NLI) and imported-file judges" in p.content.decode() for p in pages)
    assert all(TEXT not in p.content.decode() for p in pages)


@pytest.mark.parametrize("who", ["bob", "crowd"])
def test_a_nugget_post_naming_another_assessors_judge_is_refused_and_saves_nothing(client, world, who):
    turn, passage, alice, judges = world
    client.force_login(alice)

    response = create(client, turn, passage, judges[who].pk)

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert "machine (LLM, NLI) and imported-file judges" in response.json()["detail"]
    assert "relevance" not in response.json()
    assert Nugget.objects.count() == 0


@pytest.mark.parametrize(("who", "grade"), [("qrels", "0"), ("llm", "1"), ("alice", "3")])
def test_an_assessor_reads_file_machine_and_own_grades(client, world, who, grade):
    turn, passage, alice, judges = world
    client.force_login(alice)

    page = client.get(turn_url(turn), {"judge": judges[who].pk, "min_grade": 0})
    response = create(client, turn, passage, judges[who].pk)

    assert page.status_code == 200
    assert [p.grade for p in page.context["passages"]] == [int(grade)]
    assert response.status_code == 201
    assert response.json()["nugget"]["relevance"] == grade
    assert Nugget.objects.get().relevance == grade


def test_an_organiser_reads_any_judge(client, world):
    turn, passage, _alice, judges = world
    client.force_login(OrganiserFactory())

    page = client.get(turn_url(turn), {"judge": judges["bob"].pk, "min_grade": 0})
    response = create(client, turn, passage, judges["bob"].pk)

    assert page.status_code == 200
    assert set(page.context["form"].fields["judge"].queryset.values_list("name", flat=True)) == {
        j.name for j in judges.values()
    }
    assert response.status_code == 201
    assert response.json()["nugget"]["relevance"] == "4"


def test_a_judge_that_does_not_exist_or_a_bad_grade_is_a_400_with_the_reason(client, world):
    turn, passage, alice, judges = world
    client.force_login(alice)
    missing = max(j.pk for j in judges.values()) + 100

    pages = [
        client.get(turn_url(turn), {"judge": missing}),
        client.get(turn_url(turn), {"judge": "<b>x</b>"}),
        client.get(turn_url(turn), {"judge": judges["qrels"].pk, "min_grade": 9}),
    ]
    response = create(client, turn, passage, missing)

    assert [p.status_code for p in pages] == [400, 400, 400]
    assert f"no relevance judge '{missing}'" in pages[0].content.decode()
    assert pages[1]["Content-Type"].startswith("text/plain")
    assert "min_grade" in pages[2].content.decode()
    assert response.status_code == 400
    assert Nugget.objects.count() == 0


def test_the_default_relevance_judge_of_an_assessor_is_one_they_may_read(client):
    turn = TurnFactory()
    passage = PassageFactory(collection=turn.collection, text=TEXT)
    # Named to sort first: the page used to pick the first judge with grades, whoever it was.
    other = judge_for_assessor(user=UserFactory(username="aaron"))
    RelevanceJudgmentFactory(judge=other, turn=turn, passage_id=passage.passage_id, grade=4)
    client.force_login(UserFactory())

    page = client.get(turn_url(turn))

    assert page.status_code == 200
    assert page.context["relevance_judge"] is None
    assert page.context["passages"] == []


# --- The API -----------------------------------------------------------------------------------------------


def test_the_judge_list_shows_an_assessor_only_the_judges_they_may_read(world):
    _turn, _passage, alice, judges = world
    client = APIClient()
    client.force_authenticate(alice)

    response = client.get("/api/judges/")

    assert response.status_code == 200
    assert [j["name"] for j in response.json()["results"]] == ["assessor:alice", "gpt-4o", "nist-qrels"]


def test_the_judge_list_shows_an_organiser_every_judge(world):
    client = APIClient()
    client.force_authenticate(OrganiserFactory())

    response = client.get("/api/judges/")

    assert response.status_code == 200
    assert {j["name"] for j in response.json()["results"]} == {j.name for j in world[3].values()}


@pytest.mark.parametrize("url", ["/api/schema/", "/api/docs/"])
def test_the_schema_and_docs_need_a_signed_in_user(url):
    assert APIClient().get(url).status_code in (401, 403)
    client = APIClient()
    client.force_authenticate(UserFactory())
    assert client.get(url).status_code == 200
