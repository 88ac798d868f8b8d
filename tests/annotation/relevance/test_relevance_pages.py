"""The assessor pages and their JSON twins: ownership, grading, revising, PTKB, escaping."""

import re

import pytest
from django.urls import reverse

from annotation.models import PoolEntry, PtkbJudgment, RelevanceJudgment
from annotation.relevance.services import work_lease
from tests.factories import CollectionFactory, OrganiserFactory, UserFactory, relevance_campaign

pytestmark = pytest.mark.django_db

EVIL = 'Hello <script>alert("x")</script> <img src=x onerror="alert(1)"> end'


@pytest.fixture
def bob():
    return UserFactory(username="bob")


@pytest.fixture
def held(alice, bob):
    """Alice holds the first unit of a two-assessor assignment."""
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=2, n_passages=3, n_ptkb=2)
    slot = work_lease(assignment=assignment, user=alice)
    return assignment, slot


def _passage_url(slot, index=0):
    return reverse("relevance-passage", args=[slot.pk, slot.unit.turn_pks[0], index])


def _entry(slot, index=0):
    return PoolEntry.objects.filter(pool=slot.unit.assignment.pool, turn_id=slot.unit.turn_pks[0])[index]


def test_anonymous_users_are_sent_to_login(client, held):
    _assignment, slot = held
    for url in [reverse("relevance-queue"), _passage_url(slot), reverse("relevance-organise")]:
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))
    response = client.post(_passage_url(slot), {"grade": 2})
    assert response.status_code == 302
    assert not RelevanceJudgment.objects.exists()


def test_it_validates_ownership_of_units(client, held, bob):
    _assignment, slot = held
    client.force_login(bob)

    assert client.get(_passage_url(slot)).status_code == 404
    assert client.get(reverse("relevance-resume", args=[slot.pk])).status_code == 404
    assert client.get(reverse("relevance-ptkb", args=[slot.pk, slot.unit.turn_pks[0]])).status_code == 404
    response = client.post(_passage_url(slot), {"grade": 4})
    assert response.status_code == 404
    assert not RelevanceJudgment.objects.exists()


def test_assessors_cannot_open_the_organiser_page(client, alice):
    client.force_login(alice)
    assert client.get(reverse("relevance-organise")).status_code == 403
    assert client.post(reverse("relevance-organise"), {"name": "x"}).status_code == 403


def test_an_assessor_outside_the_assignment_cannot_ask_for_its_work(client, held):
    assignment, _slot = held
    client.force_login(UserFactory(username="mallory"))
    assert client.post(reverse("relevance-next", args=[assignment.pk])).status_code == 404


def test_the_queue_shows_progress_and_resumes_at_the_first_unjudged_passage(client, held, alice):
    assignment, slot = held
    client.force_login(alice)
    client.post(_passage_url(slot, 0), {"grade": 3, "time_spent_ms": 1200})

    queue = client.get(reverse("relevance-queue"))
    resumed = client.post(reverse("relevance-next", args=[assignment.pk]), follow=False)
    step = client.get(resumed["Location"])

    assert queue.status_code == 200
    assert "<strong>1</strong> judged / 3 to judge" in queue.content.decode()
    assert resumed.status_code == 302
    assert resumed["Location"] == reverse("relevance-resume", args=[slot.pk])
    # The resume URL shows the screen itself, posting (and, with JavaScript, reloading) at its own URL.
    assert step.status_code == 200
    assert step.context["entry"].passage_id == _entry(slot, 1).passage_id
    assert f'action="{_passage_url(slot, 1)}"' in step.content.decode()


def test_grading_records_time_and_revising_changes_the_grade(client, held, alice):
    _assignment, slot = held
    client.force_login(alice)

    first = client.post(_passage_url(slot, 0), {"grade": 1, "time_spent_ms": 1000})
    again = client.post(_passage_url(slot, 0), {"grade": 4, "time_spent_ms": 500})
    page = client.get(_passage_url(slot, 0))

    assert first.status_code == 302 and first["Location"] == _passage_url(slot, 1)
    assert again.status_code == 302
    assert 'value="4" id="grade-4" checked' in page.content.decode()
    judgment = RelevanceJudgment.objects.get()
    assert (judgment.passage_id, judgment.grade, judgment.time_spent_ms) == (_entry(slot).passage_id, 4, 1500)
    assert judgment.judge.user == alice


def test_it_rejects_a_grade_outside_the_scale(client, held, alice):
    _assignment, slot = held
    client.force_login(alice)

    response = client.post(_passage_url(slot, 0), {"grade": 7})

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not RelevanceJudgment.objects.exists()


def test_the_page_shows_names_guidelines_conversation_and_ptkb(client, held, alice):
    _assignment, slot = held
    client.force_login(alice)
    second_turn = slot.unit.assignment.pool.entries.exclude(turn_id=slot.unit.turn_pks[0]).first().turn

    page = client.get(_passage_url(slot)).content.decode()

    for name in ["Fails to meet", "Slightly meets", "Moderately meets", "Highly meets", "Fully meets"]:
        assert name in page
    statement = slot.unit.topic.ptkb.first()
    assert statement.text in page
    turn = slot.unit.topic.turns.get(pk=slot.unit.turn_pks[0])
    assert turn.utterance in page
    assert second_turn.utterance not in page  # later turns are not shown


def test_ptkb_step_records_each_statement_and_rejects_missing_answers(client, held, alice):
    _assignment, slot = held
    client.force_login(alice)
    turn_pk = slot.unit.turn_pks[0]
    statements = list(slot.unit.topic.ptkb.all())
    url = reverse("relevance-ptkb", args=[slot.pk, turn_pk])

    missing = client.post(url, {f"s{statements[0].pk}": "1"})
    done = client.post(url, {f"s{statements[0].pk}": "1", f"s{statements[1].pk}": "0", "time_spent_ms": 800})

    assert missing.status_code == 400
    assert "This field is required" in missing.content.decode()
    assert done.status_code == 302
    rows = dict(PtkbJudgment.objects.filter(turn_id=turn_pk).values_list("statement_id", "relevant"))
    assert rows == {statements[0].pk: True, statements[1].pk: False}


def test_collection_text_is_escaped(client, alice):
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, passage_texts=[EVIL])
    slot = work_lease(assignment=assignment, user=alice)
    turn = slot.unit.topic.turns.get()
    turn.utterance = '<img src=y onerror="steal()">what?'
    turn.save()
    client.force_login(alice)

    page = client.get(_passage_url(slot)).content.decode()

    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert '<img src=x onerror="alert(1)">' not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert "&lt;img src=y onerror=&quot;steal()&quot;&gt;what?" in page


def test_organisers_create_assignments_on_the_collections_work_page(client, held):
    assignment, _slot = held
    collection = assignment.pool.collection
    client.force_login(OrganiserFactory(username="org"))
    carol = UserFactory(username="carol")
    url = reverse("console-work", args=[collection.name])

    page = client.get(url)
    bad = client.post(url, {"form": "relevance", "pool": assignment.pool.pk, "name": "r2", "redundancy": 0})
    good = client.post(
        url,
        {
            "form": "relevance",
            "pool": assignment.pool.pk,
            "name": "r2",
            "unit_kind": "turn",
            "redundancy": 1,
            "lease_minutes": 30,
            "assessors": [carol.pk],
        },
    )

    assert page.status_code == 200
    # The progress the old organise page showed: copies complete of all, leased now (alice's), free.
    row = re.search(rf"<tr><td>{assignment.name}</td>.*?</tr>", page.content.decode(), flags=re.S)
    assert row and "<td>0 / 2</td><td>1</td><td>1</td>" in row.group(0)
    assert bad.status_code == 400
    assert good.status_code == 302
    assert carol.relevance_assignments.get().units.count() == 2


def test_the_old_organise_address_sends_to_the_one_collections_work_page(client, held):
    assignment, _slot = held
    client.force_login(OrganiserFactory(username="org"))

    response = client.get(reverse("relevance-organise"))

    assert response.status_code == 302
    assert response["Location"] == reverse("console-work", args=[assignment.pool.collection.name])


def test_the_old_organise_address_sends_to_the_collections_when_there_are_several(client, held):
    CollectionFactory(name="another")
    client.force_login(OrganiserFactory(username="org"))

    response = client.get(reverse("relevance-organise"))

    assert response.status_code == 302
    assert response["Location"] == reverse("home")


# --- JSON endpoints ---------------------------------------------------------------------------------


def test_api_next_and_grade_round_trip(client, held, alice):
    assignment, slot = held
    client.force_login(alice)

    nxt = client.post(reverse("relevance-api-next", args=[assignment.pk]))
    data = nxt.json()
    graded = client.post(
        reverse("relevance-api-grade", args=[data["slot"]]),
        {"turn_pk": data["turn_pk"], "passage_id": data["passage_id"], "grade": 2},
        content_type="application/json",
    )
    after = client.post(reverse("relevance-api-next", args=[assignment.pk])).json()

    assert nxt.status_code == 200
    assert data["slot"] == slot.pk and data["passage_id"] == _entry(slot, 0).passage_id
    assert graded.status_code == 201
    assert graded.json()["grade"] == 2
    assert after["passage_id"] == _entry(slot, 1).passage_id
    assert RelevanceJudgment.objects.filter(judge__user=alice).count() == 1


def test_api_refuses_other_assessors_units_and_unpooled_passages(client, held, alice, bob):
    _assignment, slot = held
    body = {"turn_pk": slot.unit.turn_pks[0], "passage_id": _entry(slot).passage_id, "grade": 2}
    url = reverse("relevance-api-grade", args=[slot.pk])

    assert client.post(url, body, content_type="application/json").status_code in (401, 403)
    client.force_login(bob)
    assert client.post(url, body, content_type="application/json").status_code == 404
    client.force_login(alice)
    stray = client.post(url, {**body, "passage_id": "not-pooled"}, content_type="application/json")
    assert stray.status_code == 400
    assert "not pooled" in stray.json()["fields"]["passage_id"][0]
    assert not RelevanceJudgment.objects.exists()
