"""Schemathesis against the OpenAPI schema drf-spectacular makes (what `manage.py spectacular` prints),
with an organiser's and an assessor's API token and a crowd link's cookies, on a small built collection.

Every generated request is sent with each credential, each in a savepoint rolled back after it, so a
write (a grade posted by the organiser) never changes what the next example meets. Each request is sent
as generated; then with the built collection's own values for its path parameters (a collection, run,
turn, nugget, the assessor's unit and assignment), so that its generated body reaches a real unit; then
also with its own values for the body fields that name a row (turn, passage, run, sentence), so that
the other fields reach the writes behind them, not only 404s; then that again with a NUL character in
every query parameter the operation reads. Every DRF view is in the schema, so every one is fuzzed.

Checked: no answer is a 5xx, every status and content type is one the schema documents, every body
matches the schema, and an operation that requires a token refuses a request without one. Not checked:
that every schema-valid body is accepted (a valid turn id that names no turn is rightly refused) and that
every invalid one is refused (DRF ignores query parameters it does not know, as HTTP allows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from rest_framework.authtoken.models import Token
from rest_framework.views import APIView
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotation.models import Collection, Nugget, PoolEntry, ResponseSentence, Turn
from crowd.models import CrowdBatch, CrowdCampaign
from crowd.providers.links.selectors import link_token
from devtools.pagewalk import World
from tests.fuzz.conftest import FUZZ_SETTINGS, LONG, tally

pytestmark = pytest.mark.django_db

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    ignored_auth,
]


def _openapi() -> dict:
    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


schema = schemathesis.openapi.from_dict(_openapi())
schema.app = WSGIHandler()
# The tokens are given with each call; a generated session cookie beside them would only muddle which
# credential the auth check thinks was sent.
schema.config.generation.update(with_security_parameters=False)
# The coverage phase sends every boundary and invalid value the schema implies (about 2,000 requests,
# over a minute): the long run only.
schema.config.phases.coverage.enabled = LONG


@pytest.fixture
def crowd_cookies(fuzz_world) -> str:
    """The cookies a crowd worker's browser holds after opening a link: no account, no token. Taken
    before connection_kept, as the test client puts back what that fixture takes away."""
    campaign = CrowdCampaign.objects.get(name=f"{fuzz_world.name}-crowd-1")
    batch = campaign.batches.filter(status=CrowdBatch.Status.OPEN).order_by("-id").first()
    crowd = Client()
    crowd.get(f"/crowd/take/{link_token(batch=batch, label='fuzz')}/")
    return "; ".join(f"{name}={morsel.value}" for name, morsel in crowd.cookies.items())


@pytest.fixture
def credentials(fuzz_world, crowd_cookies, connection_kept) -> dict[str, dict[str, str]]:
    """The headers each caller sends: the two users' tokens and a crowd link's cookies (which the API
    must refuse, never fail on)."""
    return {
        "organiser": {"Authorization": f"Token {Token.objects.create(user=fuzz_world.organiser).key}"},
        "assessor": {"Authorization": f"Token {Token.objects.create(user=fuzz_world.assessor).key}"},
        "crowd link": {"Cookie": crowd_cookies} if crowd_cookies else {},
    }


@dataclass(frozen=True)
class Real:
    """The built collection's own values, by the name a path parameter or a body field gives them."""

    path: dict[str, str]
    body: dict[str, Any]


@pytest.fixture
def real(fuzz_world) -> Real:
    world = World.of(Collection.objects.get(name=fuzz_world.name), fuzz_world.assessor)
    turn = Turn.objects.get(pk=world.slot.unit.turn_pks[0])
    entry = PoolEntry.objects.filter(pool=world.slot.unit.assignment.pool, turn=turn).order_by("order")[0]
    sentence = (
        ResponseSentence.objects.filter(response__turn__topic=world.support.topic, response__rank=1)
        .select_related("response__run", "response__turn")
        .order_by("pk")[0]
    )
    nugget = Nugget.objects.filter(turn=world.nugget.turn, judge__user=world.assessor).first() or world.nugget
    return Real(
        path={
            "collection": fuzz_world.name,
            "name": fuzz_world.name,
            "run": sentence.response.run.name,
            "turn_id": nugget.turn.turn_id,
            "id": str(nugget.pk),
            "pk": str(nugget.pk),
            "slot_pk": str(world.slot.pk),
            "assignment_pk": str(world.slot.unit.assignment_id),
        },
        body={
            "turn_pk": turn.pk,
            "turn_id": turn.turn_id,
            "passage_id": entry.passage_id,
            "slot": world.slot.pk,
            "run_id": sentence.response.run.name,
            "topic_id": sentence.response.turn.turn_id,
            "sentence_index": sentence.index,
        },
    )


def _variants(case, real: Real) -> list[tuple[dict[str, Any], dict[str, Any], Any]]:
    """(path parameters, query, body): as generated; with the built collection's own path values (its
    generated body then reaches a real unit); with its own body ids too; and that again with NUL in every
    query parameter the operation reads."""
    variants = [(case.path_parameters, case.query, case.body)]
    path = {name: real.path.get(name, value) for name, value in (case.path_parameters or {}).items()}
    body = case.body
    if isinstance(body, dict):
        body = {name: real.body.get(name, value) for name, value in body.items()}
    if path != case.path_parameters:
        variants.append((path, case.query, case.body))
    if body != case.body:
        variants.append((path, case.query, body))
    if len(case.operation.query):
        variants.append((path, {parameter.name: "a\x00b" for parameter in case.operation.query}, body))
    return variants


@schema.parametrize()
@FUZZ_SETTINGS
def test_it_answers_every_operation_within_its_schema(case, credentials, real):
    for path_parameters, query, body in _variants(case, real):
        case.path_parameters, case.query, case.body = path_parameters, query, body
        for headers in credentials.values():
            savepoint = transaction.savepoint()
            try:
                response = case.call(headers=headers)
                tally("api", response.status_code)
                case.validate_response(response, checks=CHECKS, headers=headers)
            finally:
                transaction.savepoint_rollback(savepoint)


def _api_views(resolver: URLResolver | None = None) -> set[str]:
    """The names of the DRF views the URL configuration routes to (the schema's own views aside)."""
    found: set[str] = set()
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            found |= _api_views(entry)
        elif isinstance(entry, URLPattern):
            view = getattr(entry.callback, "cls", None)
            if (
                isinstance(view, type)
                and issubclass(view, APIView)
                and not view.__module__.startswith("drf_")
            ):
                found.add(f"{view.__module__}.{view.__qualname__}")
    return found


def test_the_schema_and_so_the_fuzz_cover_every_api_view():
    generator = SchemaGenerator()
    generator.get_schema(request=None, public=True)
    in_schema = set()
    for _path, _pattern, method, callback in generator.endpoints:
        view = generator.create_view(callback, method)
        if view.schema is not None and not view.schema.is_excluded():
            in_schema.add(f"{callback.cls.__module__}.{callback.cls.__qualname__}")

    assert in_schema
    assert _api_views() - in_schema == set()
