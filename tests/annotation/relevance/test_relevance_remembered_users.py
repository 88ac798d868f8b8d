"""On PostgreSQL the work statement checks the user the assessor endpoints took from memory: a steady
request is its session read (the page) and one statement, and a key revoked, a user deactivated or a
password changed is refused from the next request on, nothing written.

The user's row, read in the last minute, comes from the process's memory (core.remembered); these tests
revoke, deactivate and change passwords behind that memory's back, as an organiser's admin page or
another process would.
"""

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.models import RelevanceJudgment, WorkSlot
from tests.factories import UserFactory, relevance_campaign

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def script(client):
    """Alice's script, warmed up: her unit leased, her judge made, her key remembered."""
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=6, n_ptkb=0)
    token = Token.objects.create(user=alice)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token.key}"
    client.assignment, client.alice, client.token = assignment, alice, token
    client.step = _next(client).json()
    client.step = _grade(client, client.step, next_=True).json()["next"]
    return client


def _next(client):
    url = reverse("relevance-api-next", args=[client.assignment.pk])
    return client.post(url, content_type="application/json")


def _grade(client, step, *, next_=False, grade=2):
    body = {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": grade, "next": next_}
    return client.post(
        reverse("relevance-api-grade", args=[step["slot"]]), body, content_type="application/json"
    )


def test_a_scripts_steady_next_and_grade_are_one_statement_each(script, django_assert_num_queries):
    with django_assert_num_queries(1):
        step = _next(script)
    with django_assert_num_queries(1):
        graded = _grade(script, step.json())
    following = _next(script)
    with django_assert_num_queries(1):
        with_next = _grade(script, following.json(), next_=True)

    assert (step.status_code, graded.status_code, with_next.status_code) == (200, 201, 201)
    assert (step.json()["index"], following.json()["index"], with_next.json()["next"]["index"]) == (1, 2, 3)
    assert RelevanceJudgment.objects.filter(judge__user=script.alice).count() == 3


def test_a_key_revoked_behind_the_memory_is_refused_at_once_and_nothing_is_written(script):
    Token.objects.filter(pk=script.token.pk).delete()

    graded = _grade(script, script.step)
    following = _next(script)

    assert (graded.status_code, graded.json()["detail"]) == (401, "Invalid token.")
    assert (following.status_code, following.json()["detail"]) == (401, "Invalid token.")
    assert RelevanceJudgment.objects.filter(judge__user=script.alice).count() == 1


def test_a_user_deactivated_behind_the_memory_is_refused_and_claims_no_new_unit(script):
    for _ in range(5):  # the rest of the unit: the next call would lease a new one
        script.step = _grade(script, script.step, next_=True).json()["next"]
    assert script.step is None
    script.alice.is_active = False
    script.alice.save(update_fields=["is_active"])

    following = _next(script)

    assert following.status_code == 401
    assert following.json()["detail"] == "User inactive or deleted."
    assert WorkSlot.objects.filter(assessor=script.alice).count() == 1  # the finished one only


def test_a_revoked_key_is_told_so_before_what_is_wrong_with_the_request(script):
    Token.objects.filter(pk=script.token.pk).delete()

    graded = script.post(
        reverse("relevance-api-grade", args=[script.step["slot"]]),
        {"grade": 9},
        content_type="application/json",
    )

    assert (graded.status_code, graded.json()["detail"]) == (401, "Invalid token.")


def test_work_that_is_not_the_users_is_still_404_with_a_good_key(script):
    bob = UserFactory()
    other = relevance_campaign(assessors=[bob], n_turns=1, n_passages=1, n_ptkb=0)
    script.assignment = other

    assert _next(script).status_code == 404
    assert _grade(script, script.step | {"slot": 10**9}).status_code == 404


@pytest.fixture
def page():
    """Alice on the assessor page, signed in by session, warmed up like `script`."""
    alice = UserFactory()
    browser = Client()
    browser.force_login(alice)
    browser.assignment, browser.alice = (
        relevance_campaign(assessors=[alice], n_turns=1, n_passages=6, n_ptkb=0),
        alice,
    )
    browser.step = _next(browser).json()
    browser.step = _grade(browser, browser.step, next_=True).json()["next"]
    return browser


def test_the_pages_steady_grade_is_its_session_and_one_statement(page, django_assert_num_queries):
    with django_assert_num_queries(2):  # the session (in the database here; Redis with CACHE_URL)
        graded = _grade(page, page.step, next_=True)

    assert graded.status_code == 201 and graded.json()["next"]["index"] == 2


def test_a_password_changed_behind_the_memory_voids_the_session_at_once(page):
    page.alice.set_password("a new one, elsewhere")
    page.alice.save(update_fields=["password"])

    graded = _grade(page, page.step)

    page.force_login(page.alice)  # signed in anew, with the new password
    again = _grade(page, page.step)

    assert graded.status_code == 401  # as DRF answers a request without credentials here
    assert graded.json()["code"] == "not_authenticated"
    assert again.status_code == 201
    assert RelevanceJudgment.objects.filter(judge__user=page.alice).count() == 2


def test_a_session_user_deactivated_behind_the_memory_is_refused_before_a_bad_request(page):
    page.alice.is_active = False
    page.alice.save(update_fields=["is_active"])

    bad = page.post(
        reverse("relevance-api-grade", args=[page.step["slot"]]),
        {"grade": 9},
        content_type="application/json",
    )
    following = _next(page)

    assert (bad.status_code, bad.json()["code"]) == (401, "not_authenticated")
    assert (following.status_code, following.json()["code"]) == (401, "not_authenticated")
