"""The post-edit endpoint (one edit of a nugget list, answered with the list after it): a DRF view in the
API's schema (tests/test_page_api_schema.py), reached only by the work's assessor, its body read by the
strict reader, every refusal in the API's one error shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import NuggetEdit, TopicWork
from annotation.rag_nuggets.services import nugget_work_assign
from tests.annotation.rag_nuggets.data import rag_topic
from tests.factories import OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db

REWRITE = {"action": "rewrite", "key": "2", "text": "Bees fan nectar dry", "time_spent_ms": 900}


@pytest.fixture
def work() -> TopicWork:
    data = rag_topic()
    return nugget_work_assign(
        topic=data.topic,
        user=UserFactory(username="alice"),
        step="edit",
        source_judge=data.llm,
        condition="scratch",
        machine_judge=None,
    )


def _post(client: Client, work: TopicWork, body: Any, **extra: Any):
    return client.post(
        reverse("rag-nuggets-edit", args=[work.id, 1]),
        body if isinstance(body, str) else json.dumps(body),
        content_type="application/json",
        **extra,
    )


def _nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_it_refuses_anonymous_visitors_in_the_error_shape(client, work):
    response = _post(client, work, REWRITE)

    assert response.status_code == 403
    assert response.json()["code"] == "not_authenticated"
    assert not NuggetEdit.objects.exists()


@pytest.mark.parametrize("who", ["another assessor", "an organiser"])
def test_it_validates_ownership_another_users_work_is_not_found(client, work, who):
    client.force_login(UserFactory(username="mallory") if who == "another assessor" else OrganiserFactory())

    response = _post(client, work, REWRITE)

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert not NuggetEdit.objects.exists()
    assert TopicWork.objects.get().time_spent_ms == 0


def test_the_works_assessor_edits_and_gets_the_list_after_it(client, work):
    client.force_login(work.user)

    response = _post(client, work, REWRITE)

    assert response.status_code == 200
    assert response.json() == {
        "nuggets": [
            {"key": "1", "text": "nugget 1 <i>text</i>"},
            {"key": "2", "text": "Bees fan nectar dry"},
            {"key": "3", "text": "nugget 3 <i>text</i>"},
        ]
    }
    assert NuggetEdit.objects.get().action == "rewrite"
    assert TopicWork.objects.get().time_spent_ms == 900


def test_it_adds_at_the_top_when_after_is_null(client, work):
    client.force_login(work.user)

    response = _post(client, work, {"action": "add", "after": None, "text": "First"})

    assert response.status_code == 200
    assert response.json()["nuggets"][0] == {"key": "e1", "text": "First"}


BAD_BODIES = {
    "a NUL character": (json.dumps({**REWRITE, "text": "Bees\u0000"}), "NUL"),
    "a NUL in a key": (json.dumps({**REWRITE, "a\u0000": 1}), "NUL"),
    "a lone surrogate": (json.dumps({**REWRITE, "text": "\ud800"}), "surrogate"),
    "990 nested lists": ("[" * 990 + "]" * 990, "nested deeper"),
    "40 nested lists in a field": (json.dumps({**REWRITE, "keys": _nested(40)}), "nested deeper"),
    "NaN": (json.dumps(REWRITE).replace("900", "NaN"), "NaN"),
    "not JSON": ("not json", "JSON parse error"),
}


@pytest.mark.parametrize("case", BAD_BODIES.keys())
def test_it_refuses_a_body_it_cannot_read_with_400_in_the_error_shape(client, work, case):
    body, reason = BAD_BODIES[case]
    client.force_login(work.user)

    response = _post(client, work, body)

    assert response.status_code == 400, response.content[:300]
    assert response.json()["code"] == "parse_error"
    assert reason in response.json()["detail"]
    assert not NuggetEdit.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([1, 2], "non_field_errors"),
        ({"action": "shuffle"}, "action"),
        ({"action": "merge", "keys": "1,2", "text": "x"}, "keys"),
        ({**REWRITE, "time_spent_ms": -1}, "time_spent_ms"),
        ({**REWRITE, "time_spent_ms": True}, "time_spent_ms"),
    ],
)
def test_it_refuses_a_malformed_edit_field_by_field(client, work, body, field):
    client.force_login(work.user)

    response = _post(client, work, body)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert field in response.json()["fields"]
    assert not NuggetEdit.objects.exists()


def test_a_session_post_without_the_csrf_token_is_refused(work):
    client = Client(enforce_csrf_checks=True)
    client.force_login(work.user)

    response = _post(client, work, REWRITE)

    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not NuggetEdit.objects.exists()
