"""Crowd pages refuse bad parameters with a 400 and a short reason, never a 500: absurd answer times,
HIT page ids no MTurk id looks like, an "I mean it" box that was not ticked, a campaign name with NUL."""

from __future__ import annotations

import urllib.parse

import pytest
from django.test import Client
from django.urls import reverse

from crowd.forms import ConfirmForm, ReviewForm
from crowd.models import CrowdAnswer, CrowdAssignment, CrowdCampaign, CrowdWorker
from crowd.providers.links.selectors import link_token
from crowd.providers.mturk.selectors import hit_token
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db


BAD_TIMES = ["inf", "1e400", "1e30", "-1", "nan", "soon"]


def _answers(batch) -> dict[str, str]:
    return {f"q{item.position + 1}": "yes" for item in batch.items.all()}


@pytest.mark.parametrize("ms", BAD_TIMES)
def test_it_refuses_an_absurd_answer_time_on_a_link_page(client, ms):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()

    response = client.post(
        reverse("crowd:link-take", args=[link_token(batch=batch, label="anon")]),
        {**_answers(batch), "ms2": ms},
    )

    assert response.status_code == 400
    assert "ms2 must be a number of milliseconds from 0 to 86400000" in response.content.decode()
    assert not CrowdAssignment.objects.exists()
    assert not CrowdAnswer.objects.exists()


def test_it_keeps_a_sensible_answer_time(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()

    response = client.post(
        reverse("crowd:link-take", args=[link_token(batch=batch, label="anon")]),
        {**_answers(batch), "ms2": "1500.4"},
    )

    assert response.status_code == 200
    assert list(CrowdAnswer.objects.exclude(time_spent_ms=None).values_list("time_spent_ms", flat=True)) == [
        1500
    ]


@pytest.mark.parametrize("batch_field", ["²", "9" * 30])
def test_it_refuses_a_posted_batch_that_is_no_batch_id(client, batch_field):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    url = reverse("crowd:link-take", args=[link_token(batch=batch, label="anon")])

    response = client.post(url, {**_answers(batch), "batch": batch_field})

    # Not a batch id, so the link's own batch takes the answers.
    assert response.status_code == 200
    assert CrowdAssignment.objects.get().batch == batch


def _hit_query(batch, **overrides: str) -> str:
    query = {
        "assignmentId": "A1",
        "hitId": batch.hit_id,
        "workerId": "W1",
        "turkSubmitTo": "https://workersandbox.mturk.com",
        **overrides,
    }
    return urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("workerId", "W" * 129, "workerId is longer than 128 characters"),
        ("assignmentId", "A" * 129, "assignmentId is longer than 128 characters"),
        ("hitId", "H" * 129, "hitId is longer than 128 characters"),
        ("workerId", "W\x001", "workerId contains control characters"),
        ("assignmentId", "A\n1", "assignmentId contains control characters"),
        ("hitId", "H\x1b1", "hitId contains control characters"),
    ],
)
def test_the_hit_page_refuses_ids_no_mturk_id_looks_like(settings, name, value, reason):
    settings.MTURK_ENDPOINT_URL = ""
    batch = build_campaign(batch_size=10).batches.get()
    url = reverse("crowd:hit", args=[hit_token(batch=batch)]) + "?" + _hit_query(batch, **{name: value})

    page = Client().get(url)
    post = Client().post(url, _answers(batch))

    assert (page.status_code, post.status_code) == (400, 400)
    assert page.content.decode() == reason
    assert post.content.decode() == reason
    assert not CrowdAssignment.objects.exists()
    assert not CrowdWorker.objects.exists()


@pytest.mark.parametrize("ms", BAD_TIMES)
def test_the_hit_page_refuses_an_absurd_answer_time(settings, ms):
    settings.MTURK_ENDPOINT_URL = ""
    batch = build_campaign(batch_size=10).batches.get()
    url = reverse("crowd:hit", args=[hit_token(batch=batch)]) + "?" + _hit_query(batch)

    response = Client().post(url, {**_answers(batch), "ms1": ms})

    assert response.status_code == 400
    assert "ms1 must be a number of milliseconds" in response.content.decode()
    assert not CrowdAssignment.objects.exists()


def test_the_hit_page_refuses_a_submit_address_that_is_no_url(settings):
    settings.MTURK_ENDPOINT_URL = ""
    batch = build_campaign(batch_size=10).batches.get()
    url = (
        reverse("crowd:hit", args=[hit_token(batch=batch)])
        + "?"
        + _hit_query(batch, turkSubmitTo="https://[::1")
    )

    response = Client().get(url)

    assert response.status_code == 400
    assert b"an MTurk turkSubmitTo are required" in response.content


@pytest.mark.parametrize("value", ["0", "off", "no", "false", "False", "", "maybe"])
def test_an_i_mean_it_box_counts_only_when_ticked(value):
    form = ConfirmForm({"confirm": value})
    review = ReviewForm({"confirm": "on", "reject_failed": value, "block_failed": value})

    assert not form.is_valid()
    assert "confirm" in form.errors
    assert review.is_valid()
    assert (review.cleaned_data["reject_failed"], review.cleaned_data["block_failed"]) == (False, False)


@pytest.mark.parametrize("value", ["on", "1", "true", "yes", "ON"])
def test_an_i_mean_it_box_counts_a_real_tick(value):
    assert ConfirmForm({"confirm": value}).is_valid()


@pytest.mark.parametrize("value", ["0", "off", "no", "false"])
def test_publish_without_a_real_tick_publishes_nothing(client, fake_mturk, value):
    campaign = build_campaign(assignments=1)
    client.force_login(OrganiserFactory())

    response = client.post(
        reverse("crowd:campaign-publish", args=[campaign.name]), {"publish-confirm": value}
    )

    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert not fake_mturk.state.hits
    assert not campaign.batches.exclude(hit_id="").exists()


@pytest.mark.parametrize("address", ["/crowd/campaigns/c%00/", "/crowd/campaigns/c%00/links/"])
def test_a_campaign_name_with_a_nul_is_no_campaign(client, address):
    client.force_login(OrganiserFactory())

    response = client.get(address)

    assert response.status_code == 404


@pytest.mark.parametrize("label", ["a\x00b", "x" * 124])
def test_a_link_whose_label_no_worker_id_holds_is_no_workers_link(client, label):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)
    batch = campaign.batches.first()

    response = client.get(reverse("crowd:link-take", args=[link_token(batch=batch, label=label)]))

    assert response.status_code == 404
    assert not CrowdWorker.objects.exists()
