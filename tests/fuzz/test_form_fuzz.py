"""Hypothesis-driven posts to every form an organiser or an assessor reaches, and to the JSON endpoints
the pages' scripts call, and every page's query parameters sent NUL: no answer is a 5xx.

The pages are every route of the URL configuration (devtools/pagewalk.py) on a small built collection;
each page's HTML says which forms it has, where they post and what their selects and radios offer. Each
field is then posted absent, with a value the page offers, with a nasty one (NUL, huge, unicode, numbers
no column holds) or several times, and file fields with arbitrary bytes. Each post runs in a savepoint
rolled back after it, so a form that deletes or replaces (a collection, a pool) meets the same data
every time.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from annotation.models import Nugget
from devtools.pagewalk import World, pages
from tests.fuzz.conftest import FUZZ_SETTINGS, LONG, tally
from tests.fuzz.inputs import Form, file_bodies, form_data, forms_of, json_bodies, query_names_of

pytestmark = pytest.mark.django_db


def _forms(client: Client, world: World) -> list[Form]:
    found: dict[tuple[str, tuple[str, ...]], Form] = {}
    for _route, url in pages(world):
        response = client.get(url)
        if response.status_code == 200 and "html" in response.get("Content-Type", ""):
            for form in forms_of(url, response.content.decode()):
                found.setdefault(form.key, form)
    return list(found.values())


def _post(client: Client, user, url: str, **kwargs) -> int:
    savepoint = transaction.savepoint()
    try:
        client.force_login(user)
        status = client.post(url, **kwargs).status_code
    finally:
        transaction.savepoint_rollback(savepoint)
    tally("forms", status)
    return status


def _fuzz_form(client: Client, user, form: Form, failures: list) -> None:
    data = form_data(form)
    files = st.fixed_dictionaries({name: st.one_of(st.none(), file_bodies) for name in form.files})

    @FUZZ_SETTINGS
    @given(data=data, files=files)
    def post(data, files):
        body = {name: value for name, value in data.items() if value is not None}
        for name, content in files.items():
            if content is not None:
                body[name] = SimpleUploadedFile("fuzz.txt", content)
        status = _post(client, user, form.action, data=body)
        if status >= 500:
            failures.append((form.action, status, {k: str(v)[:60] for k, v in body.items()}))

    post()


@pytest.fixture
def world(fuzz_world) -> World:
    from annotation.models import Collection

    return World.of(Collection.objects.get(name=fuzz_world.name), fuzz_world.assessor)


@pytest.mark.parametrize("who", ["organiser", "assessor"])
def test_it_answers_every_form_post_without_a_server_error(who, fuzz_world, world):
    user = getattr(fuzz_world, who)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    forms = _forms(client, world)
    assert forms, "no form found: the page walk reached no page"
    failures: list = []
    for form in forms:
        _fuzz_form(client, user, form, failures)
    assert failures == []


# The query parameters pages read from their address besides those their GET forms name: what their links
# carry (a chosen judge or sample, a task, a format, a page of a table).
PAGE_QUERY = {
    "judge",
    "compare",
    "by",
    "sample",
    "collection",
    "task",
    "format",
    "interval",
    "prefix",
    "page",
    "llm",
    "a",
    "b",
    "measure",
    "run",
}


@pytest.mark.parametrize("who", ["organiser", "assessor"])
def test_it_answers_a_nul_in_every_pages_query_without_a_server_error(who, fuzz_world, world):
    """Every page with NUL (which PostgreSQL's text cannot hold) in all its query parameters at once, and
    in the long run in each one alone, so that a parameter refused first hides none read after it."""
    client = Client(raise_request_exception=False)
    client.force_login(getattr(fuzz_world, who))
    failures: list = []
    for route, url in pages(world):
        response = client.get(url)
        names = set(PAGE_QUERY)
        if "html" in response.get("Content-Type", ""):
            names |= query_names_of(url, response.content.decode())
        queries = [dict.fromkeys(names, "a\x00b")]
        if LONG:
            queries += [{name: "a\x00b"} for name in sorted(names)]
        for query in queries:
            status = client.get(url, query).status_code
            tally("pages", status)
            if status >= 500:
                failures.append((route.name, sorted(query), status))
    assert failures == []


JSON_ENDPOINTS = {
    "nuggets-create": ["passage_id", "start", "end", "text", "relevance_judge"],
    "nuggets-update": ["start", "end", "text"],
    "nuggets-duplicate": ["duplicate_of"],
}


def _fuzz_json(client: Client, user, url: str, fields: list[str], failures: list) -> None:
    @FUZZ_SETTINGS
    @given(body=json_bodies(fields))
    def post(body):
        status = _post(client, user, url, data=body, content_type="application/json")
        if status >= 500:
            failures.append((url, status, body[:120]))

    post()


def test_it_answers_every_nugget_json_post_without_a_server_error(fuzz_world, world):
    user = fuzz_world.assessor
    client = Client(raise_request_exception=False)
    turn = world.nugget.turn
    own = Nugget.objects.filter(turn=turn, judge__user=user).first() or world.nugget
    failures: list = []
    for name, fields in JSON_ENDPOINTS.items():
        kwargs = {"name": fuzz_world.name, "turn_id": turn.turn_id}
        if name != "nuggets-create":
            kwargs["pk"] = own.pk
        _fuzz_json(client, user, reverse(name, kwargs=kwargs), fields, failures)
    assert failures == []
