"""Every refusal of the API, DRF's list endpoints and the assessor endpoints alike, comes in one shape:
{"detail": sentence, "code": word} and, for input refused field by field, "fields"."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from tests.factories import CollectionFactory, UserFactory, relevance_campaign

pytestmark = pytest.mark.django_db


def _token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def _shape(response) -> tuple[int, str, set[str]]:
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"]
    return response.status_code, body["code"], set(body)


def test_it_answers_every_refusal_of_the_assessor_endpoints_in_one_shape(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)
    next_url = reverse("relevance-api-next", args=[assignment.pk])
    client = _token_client(alice)
    step = client.post(next_url, format="json").json()
    grade_url = reverse("relevance-api-grade", args=[step["slot"]])

    anonymous = APIClient().post(next_url, format="json")
    bad_token = APIClient(HTTP_AUTHORIZATION="Token nope").post(next_url, format="json")
    session_without_csrf = APIClient(enforce_csrf_checks=True)
    session_without_csrf.force_login(alice)
    no_csrf = session_without_csrf.post(next_url, {}, format="json")
    valid = {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 2}
    not_mine = client.post(reverse("relevance-api-grade", args=[step["slot"] + 1000]), valid, format="json")
    wrong_method = client.get(next_url)
    not_json = client.post(grade_url, "{", content_type="application/json")
    too_large = client.post(grade_url, {"passage_id": "x" * 3000}, format="json")
    media = client.post(grade_url, "turn_pk=1", content_type="text/plain")
    invalid = client.post(grade_url, {"turn_pk": "x", "grade": 9}, format="json")

    assert _shape(anonymous) == (401, "not_authenticated", {"detail", "code"})
    assert _shape(bad_token) == (401, "authentication_failed", {"detail", "code"})
    assert _shape(no_csrf) == (403, "permission_denied", {"detail", "code"})
    assert _shape(not_mine) == (404, "not_found", {"detail", "code"})
    assert _shape(wrong_method) == (405, "method_not_allowed", {"detail", "code"})
    assert _shape(not_json) == (400, "parse_error", {"detail", "code"})
    assert _shape(too_large) == (413, "body_too_large", {"detail", "code"})
    assert _shape(media) == (415, "unsupported_media_type", {"detail", "code"})
    assert _shape(invalid) == (400, "invalid", {"detail", "code", "fields"})
    assert set(invalid.json()["fields"]) == {"turn_pk", "passage_id", "grade"}
    assert invalid.json()["detail"].startswith("turn_pk: A valid integer is required.")


def test_it_answers_a_script_over_its_rate_in_the_same_shape_but_never_counts_the_page(monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "2/day", "anon": "2/day"})
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=2, n_passages=1, n_ptkb=0)
    url = reverse("relevance-api-next", args=[assignment.pk])
    script = _token_client(alice)
    page = APIClient()
    page.force_login(bob)

    by_script = [script.post(url, format="json").status_code for _ in range(3)]
    by_page = [page.post(url, format="json").status_code for _ in range(3)]

    assert by_script[:2] == [200, 200]
    assert by_script[2] == 429
    assert by_page == [200, 200, 200]
    limited = script.post(url, format="json")
    assert _shape(limited) == (429, "throttled", {"detail", "code"})
    assert int(limited["Retry-After"]) > 0


def test_the_rest_of_the_api_answers_in_the_same_shape():
    CollectionFactory(name="c1")
    client = _token_client(UserFactory())

    missing = client.get("/api/collections/nope/")
    invalid = client.post("/api/collections/c1/judgments/support/", {"label": "XX"}, format="json")
    forbidden = client.post("/api/collections/c1/judgments/relevance/", {}, format="json")

    assert _shape(missing) == (404, "not_found", {"detail", "code"})
    assert _shape(invalid) == (400, "invalid", {"detail", "code", "fields"})
    assert "label" in invalid.json()["fields"]
    assert _shape(forbidden) == (403, "permission_denied", {"detail", "code"})
