"""An account's labels go to its assessor judge `assessor:<username>`: an account whose judge name another
judge already holds is refused when it is created, with the reason, instead of failing on every label."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from annotation.judge_access import AssessorJudgeTaken
from annotation.models import Judge
from annotation.services import judge_for_assessor
from tests.factories import JudgeFactory, OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("kind", [Judge.Kind.IMPORTED, Judge.Kind.LLM, Judge.Kind.CROWD])
def test_it_answers_400_for_an_account_whose_judge_name_is_taken(client, kind):
    JudgeFactory(name="assessor:carol", kind=kind)
    client.force_login(OrganiserFactory())

    response = client.post(reverse("console-people"), {"username": "carol", "role": "assessor"})

    assert response.status_code == 400
    assert (
        f"the judge &#x27;assessor:carol&#x27; that would hold carol&#x27;s labels already exists as a {kind} judge"
        in response.content.decode()
    )
    assert not get_user_model().objects.filter(username="carol").exists()
    assert Judge.objects.get(name="assessor:carol").kind == kind


def test_it_creates_an_account_whose_judge_name_is_free(client):
    JudgeFactory(name="assessor:someone-else")
    client.force_login(OrganiserFactory())

    response = client.post(reverse("console-people"), {"username": "carol", "role": "assessor"})

    assert response.status_code == 302
    assert get_user_model().objects.filter(username="carol").exists()


def test_the_judge_of_an_account_made_elsewhere_is_refused_with_the_reason_not_a_server_error():
    JudgeFactory(name="assessor:dave", kind=Judge.Kind.LLM)
    dave = UserFactory(username="dave")

    with pytest.raises(AssessorJudgeTaken, match="'assessor:dave' that would hold dave's labels") as caught:
        judge_for_assessor(user=dave)

    # A PermissionDenied: the pages and the API answer 403 with the reason.
    assert isinstance(caught.value, PermissionDenied)
    assert not Judge.objects.filter(user=dave).exists()


def test_an_account_gets_and_keeps_its_own_judge():
    erin = UserFactory(username="erin")

    judge = judge_for_assessor(user=erin)

    assert (judge.name, judge.kind, judge.user) == ("assessor:erin", Judge.Kind.ASSESSOR, erin)
    erin.refresh_from_db()
    assert judge_for_assessor(user=erin) == judge
