"""Input no column can hold is a 400 in the API's one error shape, never a 500: a NUL character in a
query parameter (PostgreSQL's text cannot hold it) and an integer past its column's range."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import RelevanceJudgment, SupportJudgment
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RunFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

INT_MAX = 2**31 - 1


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def assert_refused(response, field: str) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid"
    assert field in body["fields"], body
    assert body["detail"].startswith(f"{field}: ")


@pytest.mark.parametrize("who", [UserFactory, OrganiserFactory])
@pytest.mark.parametrize("param", ["judge", "run", "topic", "condition"])
def test_it_refuses_a_nul_in_a_support_list_filter(who, param):
    CollectionFactory(name="c1")

    response = token_client(who()).get(f"/api/collections/c1/judgments/support/?{param}=a%00b")

    assert_refused(response, param)


def test_it_refuses_a_nul_in_the_relevance_list_judge():
    CollectionFactory(name="c1")

    response = token_client(OrganiserFactory()).get("/api/collections/c1/judgments/relevance/?judge=%00")

    assert_refused(response, "judge")


def test_it_refuses_a_nul_in_a_passage_id_asked_for():
    CollectionFactory(name="c1")

    response = token_client(UserFactory()).get("/api/collections/c1/passages/?id=p1&id=p%002")

    assert_refused(response, "id.1")


def test_it_answers_a_nul_in_a_run_name_with_not_found():
    RunFactory(collection=CollectionFactory(name="c1"), name="r1")

    response = token_client(UserFactory()).get("/api/collections/c1/runs/r%001/responses/")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_the_filters_still_filter():
    collection = CollectionFactory(name="c1")
    turn = TurnFactory(topic__collection=collection)
    judge = JudgeFactory(name="bm25-judge")
    RelevanceJudgment.objects.create(judge=judge, turn=turn, passage_id="p1", grade=2)

    client = token_client(OrganiserFactory())
    listed = client.get("/api/collections/c1/judgments/relevance/?judge=bm25-judge")
    other = client.get("/api/collections/c1/judgments/relevance/?judge=nobody")
    support = client.get("/api/collections/c1/judgments/support/?condition=scratch&run=r1")

    assert (listed.status_code, listed.json()["count"]) == (200, 1)
    assert (other.status_code, other.json()["count"]) == (200, 0)
    assert (support.status_code, support.json()["count"]) == (200, 0)
    assert not SupportJudgment.objects.exists()


def test_it_refuses_a_condition_it_does_not_know():
    CollectionFactory(name="c1")

    response = token_client(UserFactory()).get("/api/collections/c1/judgments/support/?condition=both")

    assert_refused(response, "condition")


@pytest.mark.parametrize("spent", [2**31, 10**30])
def test_it_refuses_a_relevance_time_spent_past_its_column(spent):
    collection = CollectionFactory(name="c1")
    turn = TurnFactory(topic__collection=collection)
    body = {"turn_id": turn.turn_id, "passage_id": "p1", "grade": 2, "time_spent_ms": spent}

    response = token_client(OrganiserFactory()).post(
        "/api/collections/c1/judgments/relevance/", body, format="json"
    )

    assert_refused(response, "time_spent_ms")
    assert not RelevanceJudgment.objects.exists()


def test_it_takes_a_relevance_time_spent_at_the_top_of_its_column():
    collection = CollectionFactory(name="c1")
    turn = TurnFactory(topic__collection=collection)
    body = {"turn_id": turn.turn_id, "passage_id": "p1", "grade": 2, "time_spent_ms": INT_MAX}

    response = token_client(OrganiserFactory()).post(
        "/api/collections/c1/judgments/relevance/", body, format="json"
    )

    assert response.status_code == 201
    assert RelevanceJudgment.objects.get().time_spent_ms == INT_MAX


@pytest.mark.parametrize("field", ["sentence_index", "citation_index", "time_spent_ms"])
def test_it_refuses_a_support_integer_past_its_column(field):
    CollectionFactory(name="c1")
    body = {"run_id": "r1", "topic_id": "t1", "sentence_index": 0, "label": "FS", field: 10**30}

    response = token_client(UserFactory()).post("/api/collections/c1/judgments/support/", body, format="json")

    assert_refused(response, field)


def _schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _integers(schema: dict, components: dict, where: str):
    """(where, property schema) of every integer in `schema`, following $refs into the components."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        yield from _integers(components[name], components, f"{where}:{name}")
        return
    if schema.get("type") == "integer":
        yield where, schema
    for name, inner in schema.get("properties", {}).items():
        yield from _integers(inner, components, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _integers(schema[key], components, f"{where}[]")
    for key in ("allOf", "oneOf", "anyOf"):
        for inner in schema.get(key, []):
            yield from _integers(inner, components, where)


def test_every_integer_the_api_reads_is_bounded_by_its_column():
    schema = _schema()
    components = schema["components"]["schemas"]
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            where = f"{method.upper()} {path}"
            for parameter in operation.get("parameters", []):
                # Path integers are the URL's `int` converter's, looked up by Django's exact lookup, which
                # matches nothing past a column's range; the page's limit and offset are capped by
                # core.pagination.
                if parameter["in"] == "query" and parameter["name"] not in ("limit", "offset"):
                    found += _integers(parameter["schema"], components, f"{where} {parameter['name']}")
            for content in operation.get("requestBody", {}).get("content", {}).values():
                found += _integers(content["schema"], components, where)

    unbounded = sorted(
        {
            where
            for where, integer in found
            if "enum" not in integer and ("minimum" not in integer or "maximum" not in integer)
        }
    )
    assert found
    assert unbounded == [], f"bound these to their columns (core.api_input.IntegerField): {unbounded}"


def test_it_documents_the_400_of_an_operation_that_reads_query_input():
    responses = _schema()["paths"]["/api/collections/{collection}/judgments/support/"]["get"]["responses"]

    assert responses["400"]["description"] == "The reason a query parameter was refused."
