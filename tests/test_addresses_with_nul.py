"""An address with a NUL character in a name (a turn id, a run, a user name) matches no route: the 404 of
any unknown address, in the API's one error shape where JSON is wanted, never a 500 from PostgreSQL (whose
text cannot hold NUL)."""

from __future__ import annotations

import pytest
from django.urls import URLResolver, get_resolver
from django.urls.converters import PathConverter, StringConverter
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import CollectionFactory, OrganiserFactory, RunFactory, TurnFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def organiser(client):
    client.force_login(OrganiserFactory())
    CollectionFactory(name="c1")


@pytest.mark.parametrize(
    ("method", "address"),
    [
        ("get", "/nuggets/c1/1_%00/"),
        ("get", "/nuggets/c1/1_%00/gold/"),
        ("post", "/console/people/a%00b/invitation/renew/"),
        ("post", "/console/people/a%00b/invitation/revoke/"),
        ("get", "/judging/evaluation/c1/runs/r%001/"),
        ("get", "/crowd/campaigns/c%00/"),
    ],
)
def test_a_page_address_with_a_nul_in_a_name_is_not_found(client, organiser, method, address):
    response = getattr(client, method)(address)

    assert response.status_code == 404


@pytest.mark.parametrize(
    "address",
    ["/nuggets/c1/1_%00/nuggets/", "/nuggets/c1/1_%00/nuggets/1/", "/nuggets/c1/1_%00/nuggets/1/duplicate/"],
)
def test_a_json_endpoint_with_a_nul_in_a_name_answers_the_api_shape(address):
    TurnFactory(topic__collection=CollectionFactory(name="c1"), turn_id="1_1")
    client = APIClient()
    client.force_authenticate(UserFactory())

    response = client.post(address, {}, format="json")

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}


def test_an_api_address_no_route_matches_answers_the_api_shape():
    RunFactory(collection=CollectionFactory(name="c1"), name="r1")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=UserFactory()).key}")

    assert client.get("/api/no-such-thing/").json() == {"detail": "Not found.", "code": "not_found"}
    assert client.get("/api/collections/c1/runs/r%001/responses/").status_code == 404


def _plain_text_parameters(resolver=None, prefix: str = "") -> list[str]:
    """`route: parameter` for each URL parameter that takes Django's own `str` or `path`, which let NUL in."""
    found = []
    for entry in (resolver or get_resolver()).url_patterns:
        route = f"{prefix}{entry.pattern}"
        converters = getattr(entry.pattern, "converters", {})
        found += [
            f"{route}: {name}"
            for name, c in converters.items()
            if type(c) in (StringConverter, PathConverter)
        ]
        if isinstance(entry, URLResolver) and entry.app_name != "admin":
            found += _plain_text_parameters(entry, route)
    return found


def test_every_route_takes_its_names_through_a_converter_without_nul():
    assert _plain_text_parameters() == [], "use <text:...> or <textpath:...> (core/converters.py)"
