"""A collection's page names only the judges its reader may read: an assessor never sees another
assessor's name or how much they judged; organisers see every judge."""

import pytest
from django.urls import reverse

from annotation.models import Judge
from tests.factories import (
    AssessorJudgeFactory,
    JudgeFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded():
    turn = TurnFactory()
    judges = {
        "mine": AssessorJudgeFactory(),
        "theirs": AssessorJudgeFactory(),
        "llm": JudgeFactory(name="gpt-4o-grades", kind=Judge.Kind.LLM),
    }
    for judge in judges.values():
        RelevanceJudgmentFactory(judge=judge, turn=turn)
    return turn.collection, judges


def test_an_assessor_sees_their_own_judge_and_the_machines_but_no_other_assessor(client, graded):
    collection, judges = graded
    client.force_login(judges["mine"].user)
    page = client.get(reverse("collection-detail", args=[collection.name])).content.decode()
    assert judges["mine"].name in page
    assert "gpt-4o-grades" in page
    assert judges["theirs"].name not in page


def test_an_organiser_sees_every_judge(client, graded):
    collection, judges = graded
    client.force_login(OrganiserFactory())
    page = client.get(reverse("collection-detail", args=[collection.name])).content.decode()
    assert all(judge.name in page for judge in judges.values())
