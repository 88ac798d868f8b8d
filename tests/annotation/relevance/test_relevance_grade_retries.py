"""A grade retried with its idempotency key is stored once and its time counted once, on both paths.

The assessor page sends a fresh `Idempotency-Key` per grade and the same one on its retries: a grade that
committed just before an outage (answered 503, or not at all) and is then sent again must not be applied
a second time. The ORM path (SQLite) and the prepared statement (PostgreSQL) run these alike; run the file
with DATABASE_URL for the second.
"""

import uuid

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.models import PoolEntry, RelevanceJudgment, WorkSlot
from annotation.relevance.services import work_lease
from tests.concurrency import at_the_same_instant
from tests.factories import UserFactory, relevance_campaign

pytestmark = pytest.mark.django_db


class Assessor:
    """An assessor holding the copy of a one-turn unit, grading through the JSON API with a token."""

    def __init__(self, n_passages: int = 2) -> None:
        self.user = UserFactory()
        self.assignment = relevance_campaign(
            assessors=[self.user], n_turns=1, n_passages=n_passages, n_ptkb=0
        )
        self.slot = work_lease(assignment=self.assignment, user=self.user)
        self.entries = list(PoolEntry.objects.filter(pool=self.assignment.pool).order_by("order"))
        self.client = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=self.user).key}")

    def grade(self, index: int, grade: int, *, key=None, time_spent_ms=1000, then_next=True, client=None):
        entry = self.entries[index]
        headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": str(key)}
        return (client or self.client).post(
            reverse("relevance-api-grade", args=[self.slot.pk]),
            {
                "turn_pk": entry.turn_id,
                "passage_id": entry.passage_id,
                "grade": grade,
                "time_spent_ms": time_spent_ms,
                "next": then_next,
            },
            content_type="application/json",
            **headers,
        )

    def stored(self) -> list[tuple[str, int, int | None]]:
        return list(
            RelevanceJudgment.objects.filter(judge__user=self.user)
            .order_by("passage_id")
            .values_list("passage_id", "grade", "time_spent_ms")
        )


def test_it_stores_a_grade_retried_after_its_commit_once_with_its_time_counted_once():
    alice = Assessor()
    key = uuid.uuid4()

    first = alice.grade(0, 3, key=key, time_spent_ms=1200)
    retry = alice.grade(0, 3, key=key, time_spent_ms=1200)  # its answer was lost: sent again as it was

    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.json() == first.json()
    assert first.json()["next"]["passage_id"] == alice.entries[1].passage_id
    assert alice.stored() == [(alice.entries[0].passage_id, 3, 1200)]
    assert RelevanceJudgment.objects.get().grade_key == key


def test_a_retry_answers_what_the_first_attempt_stored_even_when_it_says_otherwise():
    alice = Assessor()
    key = uuid.uuid4()
    alice.grade(0, 3, key=key, time_spent_ms=1200)

    retry = alice.grade(0, 1, key=key, time_spent_ms=5000)

    assert retry.status_code == 201
    assert retry.json()["grade"] == 3
    assert alice.stored() == [(alice.entries[0].passage_id, 3, 1200)]


def test_a_retry_of_the_units_last_grade_answers_that_the_unit_is_complete_again():
    alice = Assessor(n_passages=1)
    key = uuid.uuid4()

    first = alice.grade(0, 2, key=key)
    retry = alice.grade(0, 2, key=key)

    assert (first.status_code, retry.status_code) == (201, 201)
    assert (
        retry.json()
        == first.json()
        == {
            "turn_pk": alice.entries[0].turn_id,
            "passage_id": alice.entries[0].passage_id,
            "grade": 2,
            "next": None,
            "unit_complete": True,
        }
    )
    assert WorkSlot.objects.get(pk=alice.slot.pk).completed_at is not None
    assert alice.stored() == [(alice.entries[0].passage_id, 2, 1000)]


def test_a_regrade_with_a_new_key_revises_and_adds_up_time():
    alice = Assessor()
    alice.grade(0, 3, key=uuid.uuid4(), time_spent_ms=1200)

    regrade = alice.grade(0, 1, key=uuid.uuid4(), time_spent_ms=300, then_next=False)

    assert regrade.status_code == 201
    assert regrade.json() == {
        "turn_pk": alice.entries[0].turn_id,
        "passage_id": alice.entries[0].passage_id,
        "grade": 1,
    }
    assert alice.stored() == [(alice.entries[0].passage_id, 1, 1500)]


def test_a_late_retry_after_a_grade_without_a_key_changes_nothing():
    alice = Assessor()
    key = uuid.uuid4()
    alice.grade(0, 3, key=key, time_spent_ms=1200)
    alice.grade(0, 4, time_spent_ms=100)  # a script without keys revises it

    late = alice.grade(0, 3, key=key, time_spent_ms=1200)

    assert late.status_code == 201
    assert late.json()["grade"] == 4
    assert alice.stored() == [(alice.entries[0].passage_id, 4, 1300)]


def test_the_same_key_on_another_passage_is_another_grade():
    # The key is applied at most once per (judge, turn, passage): a client reusing one across passages
    # still gets each passage graded.
    alice = Assessor()
    key = uuid.uuid4()
    alice.grade(0, 3, key=key)

    other = alice.grade(1, 2, key=key)

    assert other.status_code == 201
    assert alice.stored() == sorted(
        [(alice.entries[0].passage_id, 3, 1000), (alice.entries[1].passage_id, 2, 1000)]
    )


def test_it_rejects_a_malformed_idempotency_key_and_stores_nothing():
    alice = Assessor()

    response = alice.grade(0, 3, key="not-a-uuid")

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert list(body["fields"]) == ["Idempotency-Key"]
    assert alice.stored() == []


def test_a_keyed_grade_with_its_retry_keeps_the_pages_query_budget(django_assert_max_num_queries):
    alice = Assessor(n_passages=3)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice.user)
    page = browser.get(reverse("relevance-resume", args=[alice.slot.pk]))
    browser.defaults["HTTP_X_CSRFTOKEN"] = page.cookies["csrftoken"].value
    assert alice.grade(0, 1, key=uuid.uuid4(), client=browser).status_code == 201  # creates the judge
    key = uuid.uuid4()

    # The same budget as a grade without a key (test_relevance_api_speed.py): the key rides in the upsert.
    budget = 3
    with django_assert_max_num_queries(budget):
        first = alice.grade(1, 2, key=key, client=browser)
    with django_assert_max_num_queries(budget):
        retry = alice.grade(1, 2, key=key, client=browser)

    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.json() == first.json()
    assert (alice.entries[1].passage_id, 2, 1000) in alice.stored()


@pytest.mark.django_db(transaction=True)
def test_a_grade_and_its_retries_at_the_same_instant_are_stored_once_on_postgresql():
    alice = Assessor()
    alice.grade(1, 0)  # the judge exists: every attempt below takes the one statement's path
    key = uuid.uuid4()

    answers, errors = at_the_same_instant(
        lambda _: alice.grade(
            0, 3, key=key, client=Client(HTTP_AUTHORIZATION=alice.client.defaults["HTTP_AUTHORIZATION"])
        ),
        range(6),
    )

    assert errors == []
    assert {answer.status_code for answer in answers} == {201}
    assert len({answer.content for answer in answers}) == 1
    assert (alice.entries[0].passage_id, 3, 1000) in alice.stored()


def test_the_form_without_javascript_carries_a_key_per_page_so_a_resent_form_counts_once():
    alice = Assessor()
    page = Client()
    page.force_login(alice.user)
    entry = alice.entries[0]
    url = reverse("relevance-passage", args=[alice.slot.pk, entry.turn_id, 0])
    shown = page.get(url)
    key = shown.context["form"]["grade_key"].value()
    other = page.get(url).context["form"]["grade_key"].value()
    form = {"grade": 3, "time_spent_ms": 1200, "grade_key": str(key)}

    first = page.post(url, form)
    resent = page.post(url, form)  # the browser sends the form again: its answer never arrived

    assert (shown.status_code, first.status_code, resent.status_code) == (200, 302, 302)
    assert f'name="grade_key" value="{key}"' in shown.content.decode()
    assert key != other
    assert alice.stored() == [(entry.passage_id, 3, 1200)]
    assert RelevanceJudgment.objects.get().grade_key == uuid.UUID(str(key))


def test_the_form_without_javascript_refuses_a_malformed_key_and_stores_nothing():
    alice = Assessor()
    page = Client()
    page.force_login(alice.user)
    entry = alice.entries[0]
    url = reverse("relevance-passage", args=[alice.slot.pk, entry.turn_id, 0])

    answer = page.post(url, {"grade": 3, "time_spent_ms": 1200, "grade_key": "not-a-uuid"})

    assert answer.status_code == 400
    assert "valid UUID" in answer.content.decode()
    assert alice.stored() == []
