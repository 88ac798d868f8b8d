"""The support labels API: organisers list any judge's labels, assessors their own; an assessor submits
through the same service as the page, so assignment, condition and post-editing rules hold; 400 says why."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.collection.io import run_import
from annotation.models import Judge, SupportJudgment, Topic
from annotation.services import judge_get_or_create
from annotation.support.io import support_labels_import
from annotation.support.services import support_assignment_set
from tests.factories import CollectionFactory, OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = reverse("api-support", args=["rag24"])


@pytest.fixture
def rag(fixtures_dir):
    """GPT-4o's labels imported; alice post-edits topic 2024-1, bob judges 2024-2 from scratch."""
    collection = CollectionFactory(name="rag24")
    run_import(path=fixtures_dir / "support" / "answers.jsonl", collection=collection)
    gpt = judge_get_or_create(name="gpt-4o", kind=Judge.Kind.LLM)
    support_labels_import(
        path=fixtures_dir / "support" / "gpt4o_labels.jsonl", collection=collection, judge=gpt
    )
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    topic = {t.number: t for t in Topic.objects.filter(collection=collection)}
    support_assignment_set(topic=topic["2024-1"], user=alice, condition="post-edit", machine_judge=gpt)
    support_assignment_set(topic=topic["2024-2"], user=bob, condition="scratch")
    return {"collection": collection, "gpt": gpt, "alice": alice, "bob": bob, "topic": topic}


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def unit(run="rag-a", topic="2024-1", index=0, **extra):
    return {"run_id": run, "topic_id": topic, "sentence_index": index, **extra}


def test_it_refuses_anonymous_requests(rag):
    assert api().get(URL).status_code == 403
    assert api().post(URL, unit(label="FS"), format="json").status_code == 403
    assert not SupportJudgment.objects.filter(judge__kind=Judge.Kind.ASSESSOR).exists()


def test_a_post_editor_submits_as_themselves_and_the_shown_label_comes_from_the_machine(rag):
    response = api(rag["alice"]).post(
        URL, unit(label="FS", time_spent_ms=1500, shown_label="FS"), format="json"
    )

    assert response.status_code == 201
    body = response.json()
    assert {k: body[k] for k in ("judge", "run_id", "topic_id", "sentence_index", "citation_index")} == {
        "judge": "assessor:alice",
        "run_id": "rag-a",
        "topic_id": "2024-1",
        "sentence_index": 0,
        "citation_index": 0,
    }
    # GPT-4o said PS; a shown_label in the request is ignored.
    assert (body["label"], body["shown_label"], body["changed"], body["condition"]) == (
        "FS",
        "PS",
        True,
        "post-edit",
    )
    assert body["passage_id"] == "msmarco_v2.1_doc_01#1"
    stored = SupportJudgment.objects.get(judge__user=rag["alice"])
    assert (stored.label, stored.shown_label, stored.changed, stored.time_spent_ms) == (
        "FS",
        "PS",
        True,
        1500,
    )


def test_a_second_submission_revises_the_label_and_answers_200(rag):
    client = api(rag["alice"])
    client.post(URL, unit(label="FS", time_spent_ms=1000), format="json")

    response = client.post(URL, unit(label="PS", time_spent_ms=500), format="json")

    assert response.status_code == 200
    assert (response.json()["label"], response.json()["changed"]) == ("PS", False)
    stored = SupportJudgment.objects.get(judge__user=rag["alice"])
    assert (stored.label, stored.changed, stored.time_spent_ms) == ("PS", False, 1500)


def test_a_unit_can_be_named_by_its_cited_passage(rag):
    response = api(rag["bob"]).post(
        URL, unit(topic="2024-2", index=0, passage_id="msmarco_v2.1_doc_03#0", label="NS"), format="json"
    )

    assert response.status_code == 201
    assert (response.json()["citation_index"], response.json()["condition"]) == (0, "scratch")
    assert response.json()["shown_label"] == "" and response.json()["changed"] is None
    assert SupportJudgment.objects.get(judge__user=rag["bob"]).label == "NS"


@pytest.mark.parametrize(
    ("payload", "field", "reason"),
    [
        (unit(label="maybe"), "label", "is not a valid choice"),
        (unit(index=9, label="FS"), "sentence_index", "run rag-a has no sentence 9 for topic 2024-1"),
        (unit(run="ghost", label="FS"), "sentence_index", "run ghost has no sentence 0"),
        (unit(index=2, label="FS"), "citation_index", "cites nothing, so it is No support"),
        (
            unit(passage_id="msmarco_v2.1_doc_99#0", label="FS"),
            "passage_id",
            "does not cite msmarco_v2.1_doc_99#0",
        ),
        (
            unit(passage_id="msmarco_v2.1_doc_01#1", citation_index=1, label="FS"),
            "citation_index",
            "msmarco_v2.1_doc_01#1 is citation 0",
        ),
        (unit(topic="2024-2", label="FS"), "topic_id", "you have no support assignment for topic 2024-2"),
        (unit(sentence_index=-1, label="FS"), "sentence_index", "greater than or equal"),
    ],
)
def test_it_answers_400_with_the_reason(rag, payload, field, reason):
    response = api(rag["alice"]).post(URL, payload, format="json")

    assert response.status_code == 400
    assert reason in " ".join(response.json()["fields"][field])
    assert not SupportJudgment.objects.filter(judge__user=rag["alice"]).exists()


def test_a_unit_beyond_the_assignments_citations_is_refused_with_the_reason(rag):
    # Sentence 0 of rag-a for 2024-2 cites two passages; bob's assignment judges the first only.
    response = api(rag["bob"]).post(URL, unit(topic="2024-2", citation_index=1, label="FS"), format="json")

    assert response.status_code == 400
    assert response.json()["fields"] == {"non_field_errors": ["this unit is not part of the assignment"]}
    assert not SupportJudgment.objects.filter(judge__user=rag["bob"]).exists()


def test_a_unit_already_judged_in_another_condition_is_refused(rag):
    api(rag["alice"]).post(URL, unit(label="FS"), format="json")
    # The organiser's page refuses to switch alice's condition now; simulate an assignment changed behind
    # its back, which the service must still catch.
    rag["alice"].topic_work.filter(kind="support").update(condition="scratch", machine_judge=None)

    response = api(rag["alice"]).post(URL, unit(label="NS"), format="json")

    assert response.status_code == 400
    assert "never judges a unit in two conditions" in response.json()["fields"]["non_field_errors"][0]
    assert SupportJudgment.objects.get(judge__user=rag["alice"]).label == "FS"


def test_assessors_list_only_their_own_labels(rag):
    api(rag["alice"]).post(URL, unit(label="FS"), format="json")
    api(rag["bob"]).post(URL, unit(topic="2024-2", label="PS"), format="json")

    mine = api(rag["alice"]).get(URL)
    asking_for_others = api(rag["bob"]).get(URL, {"judge": "assessor:alice"})
    stranger = api(UserFactory()).get(URL)

    assert mine.status_code == 200
    assert [(r["judge"], r["topic_id"], r["label"]) for r in mine.json()["results"]] == [
        ("assessor:alice", "2024-1", "FS")
    ]
    assert asking_for_others.status_code == 200
    assert [r["judge"] for r in asking_for_others.json()["results"]] == ["assessor:bob"]
    assert stranger.status_code == 200 and stranger.json()["count"] == 0


def test_organisers_list_any_judge_and_filter(rag):
    api(rag["alice"]).post(URL, unit(label="FS"), format="json")
    client = api(OrganiserFactory())

    everything = client.get(URL)
    gpt_topic_1 = client.get(URL, {"judge": "gpt-4o", "topic": "2024-1"})
    post_edits = client.get(URL, {"condition": "post-edit"})
    run_b = client.get(URL, {"run": "rag-b", "judge": "gpt-4o"})

    assert everything.status_code == 200
    assert everything.json()["count"] == SupportJudgment.objects.count() == 8
    assert [(r["run_id"], r["sentence_index"], r["label"]) for r in gpt_topic_1.json()["results"]] == [
        ("rag-a", 0, "PS"),
        ("rag-a", 1, "FS"),
        ("rag-b", 0, "FS"),
        ("rag-b", 1, "FS"),
    ]
    assert [r["judge"] for r in post_edits.json()["results"]] == ["assessor:alice"]
    assert run_b.json()["count"] == 3


def test_it_accepts_token_auth_and_unknown_collections_are_404(rag):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=rag['alice']).key}")

    assert client.post(URL, unit(label="NS"), format="json").status_code == 201
    missing = reverse("api-support", args=["nope"])
    assert client.get(missing).status_code == 404
    assert client.post(missing, unit(label="NS"), format="json").status_code == 404
