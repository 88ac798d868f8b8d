"""The assessor API refuses a key past its column's range with a 400 that names the field, never a 500
(the grade statement compared it with PostgreSQL's bigint and failed)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import PoolEntry, RelevanceJudgment
from annotation.relevance.services import work_lease
from tests.factories import UserFactory, relevance_campaign

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def assert_refused(response, field: str) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["code"], list(body["fields"])) == ("invalid", [field])


@pytest.mark.parametrize("turn_pk", [10**30, 2**63, -(2**63) - 1])
def test_it_refuses_a_grade_for_a_turn_key_past_its_column(turn_pk):
    user = UserFactory()
    assignment = relevance_campaign(assessors=[user], n_turns=1, n_passages=1, n_ptkb=0)
    slot = work_lease(assignment=assignment, user=user)
    entry = PoolEntry.objects.get(pool=assignment.pool)
    body = {"turn_pk": turn_pk, "passage_id": entry.passage_id, "grade": 2}

    response = token_client(user).post(reverse("relevance-api-grade", args=[slot.pk]), body, format="json")

    assert_refused(response, "turn_pk")
    assert not RelevanceJudgment.objects.exists()


def test_it_refuses_a_slot_past_its_column_when_asking_for_the_next_passage():
    user = UserFactory()
    assignment = relevance_campaign(assessors=[user], n_turns=1, n_passages=1, n_ptkb=0)

    response = token_client(user).post(
        reverse("relevance-api-next", args=[assignment.pk]), {"slot": 10**30}, format="json"
    )

    assert_refused(response, "slot")
