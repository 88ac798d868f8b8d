"""An in-platform campaign as an external study (Prolific-style): participant ids from the address, one
batch each, the completion code or redirect at the end, and repeats that store nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from crowd.errors import CrowdError
from crowd.models import CrowdAnswer, CrowdAssignment, CrowdCampaign, CrowdStudy
from crowd.providers.panels.services import study_create
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db

DONE_URL = "https://app.prolific.com/submissions/complete?cc=C0DE1234"


@pytest.fixture
def campaign():
    return build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)


def _answers(page) -> dict[str, str]:
    total = page.context["total"]
    return {**{f"q{n}": "no" for n in range(1, total + 1)}, **{f"ms{n}": "2000" for n in range(1, total + 1)}}


def _study_url(study: CrowdStudy, **params: str) -> str:
    from urllib.parse import urlencode

    return reverse("crowd:study", args=[study.key]) + "?" + urlencode(params)


def test_organisers_make_a_study_address_on_the_campaign_page(client, campaign):
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("crowd:campaign-study", args=[campaign.name]),
        {
            "panel": "prolific",
            "worker_param": "PROLIFIC_PID",
            "study_param": "STUDY_ID",
            "session_param": "SESSION_ID",
            "completion_url": DONE_URL,
        },
    )
    assert response.status_code == 302
    study = CrowdStudy.objects.get(campaign=campaign)
    assert (study.completion_url, study.completion_code, len(study.key) >= 20) == (DONE_URL, "", True)
    page = client.get(reverse("crowd:campaign", args=[campaign.name])).content.decode()
    assert f"http://testserver/crowd/study/{study.key}/" in page
    assert "PROLIFIC_PID=" in page


def test_a_study_without_a_way_back_to_the_panel_is_refused(client, campaign):
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("crowd:campaign-study", args=[campaign.name]),
        {
            "panel": "prolific",
            "worker_param": "PROLIFIC_PID",
            "study_param": "STUDY_ID",
            "session_param": "S",
        },
    )
    assert response.status_code == 400
    assert "Give a completion code, a completion URL, or both." in response.content.decode()
    assert not CrowdStudy.objects.exists()
    with pytest.raises(CrowdError, match="not in-platform"):
        study_create(campaign=build_campaign(), completion_code="X")


def test_a_participant_answers_one_batch_and_is_sent_back_to_the_panel(campaign):
    study = study_create(campaign=campaign, completion_url=DONE_URL)
    url = _study_url(study, PROLIFIC_PID="5f3a9c0e1b2d", STUDY_ID="st1", SESSION_ID="se1")
    participant = Client()
    page = participant.get(url)
    assert page.status_code == 200
    assert f'name="batch" value="{page.context["batch"].id}"' in page.content.decode()

    done = participant.post(url, {"batch": page.context["batch"].id, **_answers(page)})
    assert done.status_code == 302
    assert done["Location"] == DONE_URL
    assignment = CrowdAssignment.objects.get()
    assert (assignment.worker.worker_id, assignment.status) == ("prolific:5f3a9c0e1b2d", "Submitted")
    stored = CrowdAnswer.objects.count()

    # A reload, a second tab or the same post again: the completion again, nothing stored.
    assert participant.get(url)["Location"] == DONE_URL
    again = participant.post(url, {"batch": page.context["batch"].id, **_answers(page)})
    assert again["Location"] == DONE_URL
    assert (CrowdAssignment.objects.count(), CrowdAnswer.objects.count()) == (1, stored)


def test_participants_are_spread_over_batches_and_a_full_study_says_so(campaign):
    study = study_create(campaign=campaign, completion_code="C0DE1234")
    batches = []
    for pid in ("p1", "p2"):
        url = _study_url(study, PROLIFIC_PID=pid)
        page = Client().get(url)
        batches.append(page.context["batch"].index)
        done = Client().post(url, {"batch": page.context["batch"].id, **_answers(page)})
        assert done.status_code == 200
        assert '<strong id="crowd-code">C0DE1234</strong>' in done.content.decode()
    assert sorted(batches) == [0, 1]
    full = Client().get(_study_url(study, PROLIFIC_PID="p3"))
    assert full.status_code == 410
    assert "all the answers it needs" in full.content.decode()


def test_the_parameter_names_are_the_panels(campaign):
    study = study_create(
        campaign=campaign, panel="mypanel", worker_param="pid", study_param="sid", completion_code="OK"
    )
    assert Client().get(_study_url(study, PROLIFIC_PID="p1")).status_code == 400
    page = Client().get(_study_url(study, pid="p1"))
    assert page.status_code == 200
    Client().post(_study_url(study, pid="p1"), {"batch": page.context["batch"].id, **_answers(page)})
    assert CrowdAssignment.objects.get().worker.worker_id == "mypanel:p1"


def test_bad_participant_or_study_ids_are_refused_without_storing(campaign):
    study = study_create(campaign=campaign, external_study_id="st1", completion_code="OK")
    missing = Client().get(_study_url(study))
    assert missing.status_code == 400
    assert "needs your participant id (PROLIFIC_PID)" in missing.content.decode()
    assert Client().get(_study_url(study, PROLIFIC_PID="<b>x</b>")).status_code == 400
    wrong = Client().get(_study_url(study, PROLIFIC_PID="p1", STUDY_ID="other"))
    assert wrong.status_code == 400
    assert "is not this study&#x27;s id" in wrong.content.decode()
    assert Client().get(_study_url(study, PROLIFIC_PID="p1", STUDY_ID="st1")).status_code == 200
    assert Client().get(reverse("crowd:study", args=["no-such-study"])).status_code == 404
    # Only the participant let in holds a place; the refused ones stored nothing.
    assert list(CrowdAssignment.objects.values_list("worker__worker_id", "status")) == [
        ("prolific:p1", CrowdAssignment.Status.ACCEPTED)
    ]


def test_a_batch_filled_meanwhile_still_gives_the_participant_the_completion(campaign):
    study = study_create(campaign=campaign, completion_code="PAID")
    first = Client()
    page_a = first.get(_study_url(study, PROLIFIC_PID="a"))
    batch = page_a.context["batch"]
    # "a" works past the campaign's work time, so the place they held is free again: "c" is shown it...
    CrowdAssignment.objects.filter(batch=batch).update(
        accept_time=timezone.now() - timedelta(seconds=campaign.duration_seconds + 1)
    )
    assert Client().get(_study_url(study, PROLIFIC_PID="c")).context["batch"] == batch
    first.post(_study_url(study, PROLIFIC_PID="a"), {"batch": batch.id, **_answers(page_a)})
    # ...and posts after "a" took its only place.
    late = Client().post(_study_url(study, PROLIFIC_PID="c"), {"batch": batch.id, **_answers(page_a)})
    assert late.status_code == 200
    assert "your answers were not needed" in late.content.decode()
    assert "PAID" in late.content.decode()
    assert CrowdAssignment.objects.filter(batch=batch).count() == 1
