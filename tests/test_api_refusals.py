"""What the API fuzzer (tests/fuzz/test_api_fuzz.py) found, pinned: the schema documents how each
operation refuses a request, and a page limit past the database's integers is a capped page, not a 500."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.pagination import MAX_LIMIT
from tests.factories import CollectionFactory, RunFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client() -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=UserFactory()).key}")
    return client


@pytest.mark.parametrize("limit", [str(10**30), "1450382033923934257152", str(2**63)])
def test_it_caps_a_page_limit_past_the_databases_integers(client, limit):
    collection = CollectionFactory(name="c1")
    RunFactory.create_batch(3, collection=collection)

    response = client.get(f"/api/collections/c1/runs/?limit={limit}")

    assert response.status_code == 200
    assert response.json()["count"] == 3
    assert len(response.json()["results"]) == 3


def test_it_gives_at_most_the_largest_page_with_a_link_to_the_rest(client, settings):
    collection = CollectionFactory(name="c1")
    RunFactory.create_batch(MAX_LIMIT + 1, collection=collection)

    response = client.get(f"/api/collections/c1/runs/?limit={MAX_LIMIT * 5}")

    assert response.status_code == 200
    assert len(response.json()["results"]) == MAX_LIMIT
    assert f"offset={MAX_LIMIT}" in response.json()["next"]


def test_it_answers_an_offset_past_the_databases_integers_with_an_empty_page(client):
    CollectionFactory(name="c1")

    response = client.get(f"/api/collections/c1/runs/?offset={10**30}&limit={10**30}")

    assert response.status_code == 200
    assert response.json()["results"] == []


def _operations() -> dict[tuple[str, str], dict]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (method.upper(), path): operation
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    }


def test_it_documents_how_every_operation_refuses_a_request():
    operations = _operations()

    for (method, path), operation in operations.items():
        codes = set(operation["responses"])
        assert "429" in codes, (method, path)
        # Asking for a token is the one operation open to anyone.
        if (method, path) != ("POST", "/api/token/"):
            assert "403" in codes, (method, path)
        if "{" in path:
            assert "404" in codes, (method, path)
        if method == "POST":
            assert {"400", "413", "415"} <= codes, (method, path)
    assert "404" not in operations[("GET", "/api/collections/")]["responses"]
    assert "400" not in operations[("GET", "/api/judges/")]["responses"]


def test_it_keeps_a_views_own_description_of_a_refusal():
    operation = _operations()[("POST", "/api/collections/{collection}/judgments/relevance/")]

    assert operation["responses"]["403"]["description"].startswith("Not an organiser")


def test_it_answers_a_missing_collection_with_a_documented_404(client):
    response = client.get("/api/collections/nope/runs/")

    assert response.status_code == 404
    assert "No Collection matches" in response.json()["detail"]


def test_it_documents_the_401_of_an_operation_that_tries_a_token_first():
    operations = _operations()

    assert "401" in operations[("POST", "/relevance/api/work/{slot_pk}/grade/")]["responses"]
    assert "401" not in operations[("GET", "/api/collections/")]["responses"]
