"""A job writes as a machine judge named on the form or the command: the name goes through the judge-name
rule every import obeys, so a job never creates a judge named like an assessor's or one pages cannot
address, nor writes into people's labels."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Judge
from judging.machine.jobs import JobError, llm_judge_get_or_create
from judging.models import JudgeJob
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    OrganiserFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    collection = CollectionFactory(name="mine")
    NuggetFactory(judge=JudgeFactory(name="gold-mine"), turn=TurnFactory(topic__collection=collection))
    return collection


def start_dedup(client, judge_name: str):
    client.force_login(OrganiserFactory())
    return client.post(
        reverse("judging:job-start"),
        {
            "collection": "mine",
            "task": "dedup",
            "judge_name": judge_name,
            "source_judge": "gold-mine",
            "exact_only": "on",
        },
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("assessor:carol", "judge names starting with &#x27;assessor:&#x27; are kept for assessors"),
        (
            "crowd-worker:w1",
            "judge names starting with &#x27;crowd-worker:&#x27; are kept for one crowd worker",
        ),
        ("=cmd", "starts with &#x27;=&#x27;, which a spreadsheet reads as a formula"),
        ("@sum", "starts with &#x27;@&#x27;, which a spreadsheet reads as a formula"),
        ("crowd-majority", "judge name &#x27;crowd-majority&#x27; is kept for crowd campaigns"),
        ("gold/dedup", "contains &#x27;/&#x27;"),
        ("gold\tdedup", "contains the control character U+0009"),
        ("..", "is not a name"),
    ],
)
def test_it_answers_400_with_the_reason_for_a_name_a_judge_may_not_have(client, collection, name, reason):
    response = start_dedup(client, name)

    assert response.status_code == 400
    assert reason in response.content.decode()
    assert not Judge.objects.filter(name=name).exists()
    assert not JudgeJob.objects.exists()


def test_it_answers_400_for_an_assessors_judge_and_writes_nothing(client, collection):
    bob = AssessorJudgeFactory(user__username="bob")

    response = start_dedup(client, bob.name)

    assert response.status_code == 400
    assert "judge &#x27;assessor:bob&#x27; is an assessor" in response.content.decode()
    assert not JudgeJob.objects.exists()
    assert Judge.objects.get(name="assessor:bob").kind == Judge.Kind.ASSESSOR


@pytest.mark.parametrize(
    "name", ["assessor:dave", "llm/relevance", "llm\nrelevance", "+llm", "mturk-majority"]
)
def test_an_llm_job_refuses_the_same_names(name):
    with pytest.raises(JobError, match="assessor|contains|formula|kept for crowd"):
        llm_judge_get_or_create(name=name, model="gpt-4o", prompt_version="umbrela-1")

    assert not Judge.objects.filter(name=name).exists()
