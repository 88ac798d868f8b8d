"""Support assessment pages: reached only through their owner; organiser pages for staff only."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Judge, SupportJudgment, Topic, TopicWork
from annotation.support.services import support_assignment_set
from tests.background import IMMEDIATE
from tests.factories import (
    CollectionFactory,
    OrganiserFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _reports_in_request(settings):
    """A task runs as it is queued, so a stored report's first view computes it and shows the figures
    (test_stored_support_pages.py follows the queue)."""
    settings.TASKS = IMMEDIATE


@pytest.fixture
def post_edit(rag, gpt, alice):
    topic = Topic.objects.get(collection=rag, number="2024-1")
    return support_assignment_set(topic=topic, user=alice, condition="post-edit", machine_judge=gpt)


def unit_url(assignment, position=1):
    return reverse("support-unit", args=[assignment.id, position])


@pytest.mark.parametrize(
    "name", ["support-assignments", "support-unit", "support-organise", "support-leaderboard"]
)
def test_it_sends_anonymous_users_to_login(client, post_edit, name):
    args = {
        "support-unit": [post_edit.id, 1],
        "support-organise": ["rag24"],
        "support-leaderboard": ["rag24"],
    }

    response = client.get(reverse(name, args=args.get(name, [])))

    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_it_hides_another_assessors_unit(client, post_edit):
    client.force_login(UserFactory(username="mallory"))

    get = client.get(unit_url(post_edit))
    post = client.post(unit_url(post_edit), {"label": "NS", "time_spent_ms": "10"})

    assert get.status_code == 404
    assert post.status_code == 404
    assert not SupportJudgment.objects.filter(judge__kind=Judge.Kind.ASSESSOR).exists()


def test_the_post_edit_page_shows_and_preselects_the_machine_label(client, post_edit, alice):
    client.force_login(alice)

    response = client.get(unit_url(post_edit))

    assert response.status_code == 200
    html = response.content.decode()
    assert "LLM label: <strong>Partial support</strong>" in html
    assert 'value="PS" id="label-PS" data-key="2" checked' in html
    assert "Bees make honey from flower nectar." in html
    assert "Honey bees collect nectar from flowers" in html
    assert "Unit 1 of 4 · 0 judged" in html


def test_the_scratch_page_shows_no_machine_label(client, rag, gpt):
    bob = UserFactory(username="bob")
    topic = Topic.objects.get(collection=rag, number="2024-1")
    assignment = support_assignment_set(topic=topic, user=bob, condition="scratch")
    client.force_login(bob)

    response = client.get(unit_url(assignment))

    assert response.status_code == 200
    html = response.content.decode()
    assert "LLM label" not in html
    assert " checked" not in html


def test_the_page_escapes_answer_text(client, rag, alice):
    topic = Topic.objects.get(collection=rag, number="2024-1")
    sentence = topic.turns.get().responses.get(run__name="rag-a").sentences.get(index=0)
    sentence.text = "<script>alert(1)</script>"
    sentence.save()
    client.force_login(alice)
    assignment = support_assignment_set(topic=topic, user=alice, condition="scratch")

    html = client.get(unit_url(assignment)).content.decode()

    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html


def test_the_answer_sentences_are_numbered_from_one(client, post_edit, alice):
    client.force_login(alice)
    response = client.get(unit_url(post_edit))
    assert response.status_code == 200
    html = response.content.decode()
    (tag,) = re.findall(r'<ol class="support-answer"[^>]*>', html)
    start = re.search(r'\sstart="(\d+)"', tag)
    assert start is None or start.group(1) == "1"  # an <ol> numbers from 1 unless told otherwise


def test_submitting_stores_the_label_and_goes_on(client, post_edit, alice):
    client.force_login(alice)

    response = client.post(unit_url(post_edit), {"label": "FS", "time_spent_ms": "1234"})

    assert response.status_code == 302
    assert response["Location"] == unit_url(post_edit, 2)
    stored = SupportJudgment.objects.get(judge__user=alice)
    assert (stored.label, stored.shown_label, stored.changed, stored.condition, stored.time_spent_ms) == (
        "FS",
        "PS",
        True,
        "post-edit",
        1234,
    )


def test_the_last_unit_returns_to_the_assignments(client, post_edit, alice):
    client.force_login(alice)

    response = client.post(unit_url(post_edit, 4), {"label": "FS"})

    assert response.status_code == 302
    assert response["Location"] == reverse("support-assignments")
    assert client.get(reverse("support-assignments")).content.decode().count("1 / 4") == 1


def test_it_answers_400_to_a_label_outside_the_scale(client, post_edit, alice):
    client.force_login(alice)

    response = client.post(unit_url(post_edit), {"label": "maybe"})

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not SupportJudgment.objects.filter(judge__user=alice).exists()


def test_a_position_past_the_last_unit_is_404(client, post_edit, alice):
    client.force_login(alice)
    assert client.get(unit_url(post_edit, 5)).status_code == 404


def test_assessors_may_not_organise_or_read_the_leaderboard(client, rag, alice):
    client.force_login(alice)

    assert client.get(reverse("support-organise", args=["rag24"])).status_code == 403
    assert client.post(reverse("support-organise", args=["rag24"]), {}).status_code == 403
    assert client.get(reverse("support-leaderboard", args=["rag24"])).status_code == 403


def test_an_organiser_assigns_a_condition(client, rag, gpt, alice):
    client.force_login(OrganiserFactory(username="olga"))
    topic = Topic.objects.get(collection=rag, number="2024-2")

    response = client.post(
        reverse("support-organise", args=["rag24"]),
        {
            "topic": topic.number,
            "assessor": alice.id,
            "condition": "post-edit",
            "machine_judge": gpt.id,
            "max_citations": 1,
        },
    )

    assert response.status_code == 302
    assignment = TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, user=alice)
    assert (assignment.topic, assignment.condition, assignment.machine_judge) == (topic, "post-edit", gpt)


def test_the_organiser_page_refuses_a_second_condition_with_400(client, post_edit, alice):
    client.force_login(alice)
    client.post(unit_url(post_edit), {"label": "FS"})
    client.force_login(OrganiserFactory(username="olga"))

    response = client.post(
        reverse("support-organise", args=["rag24"]),
        {"topic": post_edit.topic.number, "assessor": alice.id, "condition": "scratch", "max_citations": 1},
    )

    assert response.status_code == 400
    assert "never sees the same unit in both conditions" in response.content.decode()
    assert TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, user=alice).condition == "post-edit"


def test_the_leaderboard_ranks_runs_under_a_judge(client, rag, gpt):
    client.force_login(OrganiserFactory(username="olga"))

    response = client.get(reverse("support-leaderboard", args=["rag24"]), {"judge": "gpt-4o"})

    assert response.status_code == 200
    rows = [(r["run"], round(r["weighted_recall"], 4)) for r in response.context["rows"]]
    assert rows == [("rag-a", 0.75), ("rag-b", 0.625)]
    assert response.context["mean_sentences"] == pytest.approx(2.25)


def test_an_empty_leaderboard_says_how_to_get_labels(client):
    CollectionFactory(name="fresh")
    client.force_login(OrganiserFactory(username="olga"))

    response = client.get(reverse("support-leaderboard", args=["fresh"]))

    assert response.status_code == 200
    body = response.content.decode()
    assert "judge support --collection fresh" in body
    assert "import_support_labels LABELS.jsonl --collection fresh" in body
    assert reverse("support-organise", args=["fresh"]) in body
    assert response.context["rows"] == []


def test_the_leaderboard_names_a_judge_without_labels_instead_of_hiding_the_swap(client, rag, gpt):
    client.force_login(OrganiserFactory(username="olga"))

    response = client.get(reverse("support-leaderboard", args=["rag24"]), {"judge": "<gpt-5>"})

    assert response.status_code == 200
    body = response.content.decode()
    assert "No judge named “&lt;gpt-5&gt;” has support labels in rag24; showing gpt-4o instead" in body
    assert response.context["judge"] == gpt


def test_a_known_judge_shows_no_unknown_judge_notice(client, rag, gpt):
    client.force_login(OrganiserFactory(username="olga"))

    response = client.get(reverse("support-leaderboard", args=["rag24"]), {"judge": "gpt-4o"})

    assert response.status_code == 200
    assert 'id="support-unknown-judge"' not in response.content.decode()


def test_the_organiser_page_of_a_collection_without_topics_says_to_import_answers(client, rag):
    CollectionFactory(name="fresh")
    client.force_login(OrganiserFactory(username="olga"))

    empty = client.get(reverse("support-organise", args=["fresh"]))
    full = client.get(reverse("support-organise", args=["rag24"]))

    assert (empty.status_code, full.status_code) == (200, 200)
    assert "import_run ANSWERS.jsonl --collection fresh" in empty.content.decode()
    assert 'id="support-no-topics"' not in full.content.decode()
    assert reverse("support-disagreements", args=["rag24"]) in full.content.decode()


def test_the_organiser_page_lists_a_page_of_assignments_with_the_same_queries(client, rag):
    topic = Topic.objects.get(collection=rag, number="2024-1")
    client.force_login(OrganiserFactory(username="olga"))
    url = reverse("support-organise", args=["rag24"])
    TopicWork.objects.create(kind=TopicWork.Kind.SUPPORT, topic=topic, user=UserFactory(username="a-000"))
    with CaptureQueriesContext(connection) as one:
        client.get(url)
    TopicWork.objects.bulk_create(
        TopicWork(kind=TopicWork.Kind.SUPPORT, topic=topic, user=UserFactory(username=f"a-{i:03}"))
        for i in range(1, 60)
    )
    with CaptureQueriesContext(connection) as many:
        first, last = client.get(url), client.get(url, {"page": 2})

    assert len(many) == 2 * len(one)
    assert [a.user.username for a in first.context["assignments"]][:2] == ["a-000", "a-001"]
    assert len(first.context["assignments"]) == 50 and len(last.context["assignments"]) == 10
    assert "Assignments 1–50 of 60" in first.content.decode()


def test_a_unit_page_costs_the_same_queries_whatever_the_runs_answering_its_topic(client, alice):
    collection = CollectionFactory(name="many")
    turn = TurnFactory(topic__collection=collection, topic__number="7", turn_id="7", position=1)

    def answer(runs: range) -> None:
        for r in runs:
            response = ResponseFactory(run=RunFactory(collection=collection, name=f"run-{r:02d}"), turn=turn)
            for i in range(3):
                ResponseSentenceFactory(response=response, index=i, text=f"Claim {i}.", citations=[f"d{i}#0"])

    answer(range(2))
    assignment = support_assignment_set(topic=turn.topic, user=alice, condition="scratch")
    client.force_login(alice)
    with CaptureQueriesContext(connection) as few:
        first = client.get(unit_url(assignment, 2))
    answer(range(2, 12))
    with CaptureQueriesContext(connection) as many:
        later = client.get(unit_url(assignment, 2))

    assert (first.status_code, later.status_code) == (200, 200)
    assert (first.context["total"], later.context["total"]) == (6, 36)
    assert first.context["unit"].key == later.context["unit"].key
    assert len(few) == len(many)
