"""The assessor endpoints answer as DRF's views do: JSON only, and a session Django would refuse is refused."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

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


def test_it_answers_json_and_refuses_a_client_that_accepts_only_html():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")

    refused = _next(client, assignment, HTTP_ACCEPT="text/html")
    answered = _next(client, assignment, HTTP_ACCEPT="*/*")

    assert refused.status_code == 406
    assert answered.status_code == 200
    assert answered["Content-Type"] == "application/json"
    assert answered.json()["index"] == 0


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


def test_it_refuses_a_remembered_users_session_signed_in_by_a_backend_no_longer_configured():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = _signed_in(alice)
    assert _next(client, assignment).status_code == 200  # alice is remembered from here on
    session = client.session
    session["_auth_user_backend"] = "some.removed.Backend"
    session.save()

    response = _next(client, assignment)

    assert response.status_code in (401, 403)
    assert response.json()["code"] == "not_authenticated"
