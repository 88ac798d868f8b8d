"""The assessor endpoints' leaner DRF parts (core/lean_api.py) answer as DRF's own would."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.relevance.api import RelevanceGradeInput
from tests.factories import UserFactory, relevance_campaign

pytestmark = pytest.mark.django_db


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _next(client: Client, assignment, **headers):
    return client.post(
        reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json", **headers
    )


def test_it_answers_json_whatever_the_client_accepts():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")

    response = _next(client, assignment, HTTP_ACCEPT="text/html")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["index"] == 0


def test_it_reads_a_signed_in_users_account_without_the_orm_query():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = _signed_in(alice)

    # The first request of this process for her: later ones on PostgreSQL take the row from memory and
    # leave it to the work statement to check (core.remembered).
    with CaptureQueriesContext(connection) as queries:
        response = _next(client, assignment)

    assert response.status_code == 200
    assert response.json()["index"] == 0
    user_reads = [
        q["sql"] for q in queries if q["sql"].lstrip().startswith("SELECT") and 'FROM "auth_user"' in q["sql"]
    ]
    assert len(user_reads) == 1
    assert "LIMIT" not in user_reads[0]  # the ORM's get() adds LIMIT 21; the prepared statement does not


def test_it_refuses_a_session_whose_password_changed_since():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)
    client = _signed_in(alice)
    alice.set_password("another-password-1")
    alice.save()

    response = _next(client, assignment)

    assert response.status_code in (401, 403)
    assert response.json()["code"] == "not_authenticated"


def test_it_refuses_a_session_of_a_deactivated_account():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)
    client = _signed_in(alice)
    alice.is_active = False
    alice.save()

    response = _next(client, assignment)

    assert response.status_code in (401, 403)
    assert response.json()["code"] == "not_authenticated"


def test_it_validates_each_requests_input_with_its_own_fields():
    bad = RelevanceGradeInput(data={"turn_pk": "x", "passage_id": "p", "grade": 9})
    good = RelevanceGradeInput(data={"turn_pk": 3, "passage_id": "p", "grade": 2})

    assert not bad.is_valid()
    assert good.is_valid()
    assert set(bad.errors) == {"turn_pk", "grade"}
    assert good.validated_data == {"turn_pk": 3, "passage_id": "p", "grade": 2, "next": False}
    assert good.fields["grade"] is not bad.fields["grade"]
    assert good.fields["grade"].parent is good
