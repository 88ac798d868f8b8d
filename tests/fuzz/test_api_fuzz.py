"""Schemathesis against the OpenAPI schema drf-spectacular makes (what `manage.py spectacular` prints),
with an organiser's and an assessor's API token, on a small built collection.

Every generated request is sent as both users, each in a savepoint rolled back after it, so a write
(a grade posted by the organiser) never changes what the next example meets. Path parameters are the
built collection's own names half of the time, so requests reach real rows and not only 404s.

Checked: no answer is a 5xx, every status and content type is one the schema documents, every body
matches the schema, and an operation that requires a token refuses a request without one. Not checked:
that every schema-valid body is accepted (a valid turn id that names no turn is rightly refused) and that
every invalid one is refused (DRF ignores query parameters it does not know, as HTTP allows).
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.db import transaction
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotation.models import Run
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
def tokens(fuzz_world, connection_kept) -> dict[str, str]:
    return {
        "organiser": Token.objects.create(user=fuzz_world.organiser).key,
        "assessor": Token.objects.create(user=fuzz_world.assessor).key,
    }


def _variants(case, world) -> list[dict[str, str] | None]:
    """The case as generated and, when it names a collection or run, again with the built ones' names."""
    if not case.path_parameters or "collection" not in case.path_parameters:
        return [None]
    real = {**case.path_parameters, "collection": world.name}
    if "run" in real:
        real["run"] = Run.objects.filter(collection__name=world.name).order_by("name").first().name
    return [None, real]


@schema.parametrize()
@FUZZ_SETTINGS
def test_it_answers_every_operation_within_its_schema(case, tokens, fuzz_world):
    for path_parameters in _variants(case, fuzz_world):
        if path_parameters is not None:
            case.path_parameters = path_parameters
        for key in tokens.values():
            headers = {"Authorization": f"Token {key}"}
            savepoint = transaction.savepoint()
            try:
                response = case.call(headers=headers)
                tally("api", response.status_code)
                case.validate_response(response, checks=CHECKS, headers=headers)
            finally:
                transaction.savepoint_rollback(savepoint)
