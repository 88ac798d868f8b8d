"""A name a page reads from its address that holds a NUL character matches nothing, as any unknown name
does, instead of failing in PostgreSQL, whose text cannot hold NUL (a 500)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Judge
from core.names import named
from tests.factories import CollectionFactory, JudgeFactory, OrganiserFactory

pytestmark = pytest.mark.django_db


def test_a_name_with_a_nul_names_no_row():
    JudgeFactory(name="gpt-4o")

    assert list(named(Judge.objects.all(), "gpt-4o\x00")) == []
    assert [j.name for j in named(Judge.objects.all(), "gpt-4o")] == ["gpt-4o"]


@pytest.mark.parametrize("query", [{"judge": "a\x00b"}, {"compare": "\x00"}])
def test_the_support_leaderboard_takes_a_judge_name_with_a_nul_as_unknown(client, query):
    collection = CollectionFactory()
    client.force_login(OrganiserFactory())

    response = client.get(reverse("support-leaderboard", args=[collection.name]), query)

    assert response.status_code == 200


def test_the_estimate_page_takes_a_sample_name_with_a_nul_as_unknown(client):
    collection = CollectionFactory()
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:hybrid-estimate", args=[collection.name]), {"sample": "s\x00"})

    assert response.status_code == 200


def test_the_jobs_page_takes_a_collection_name_with_a_nul_as_unknown(client):
    CollectionFactory()
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:job-list"), {"collection": "c\x00"})

    assert response.status_code == 200


def test_starting_a_job_takes_a_collection_name_with_a_nul_as_unknown(client):
    CollectionFactory()
    client.force_login(OrganiserFactory())

    response = client.post(reverse("judging:job-start"), {"collection": "c\x00", "task": "relevance"})

    assert response.status_code == 400
