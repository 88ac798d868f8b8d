"""An MTurk campaign tried against the local fake as `make run` sets it up, in real Chromium: nothing says
where this site is (no ASSAY_BASE_URL, no MTURK_EXTERNAL_URL), so the campaign page publishes HITs framed
from the address it was opened at; a made-up worker's link on the page opens the fake's worker frame, which
shows this site's question page (not whatever listens on another port)."""

from __future__ import annotations

import pytest
from django.test import override_settings
from playwright.sync_api import expect

from crowd.models import CrowdCampaign
from devtools.mturk_server import FakeMTurkServer
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import OrganiserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fake_mturk(live_server):
    with FakeMTurkServer() as running:
        with override_settings(
            MTURK_ENDPOINT_URL=running.url, MTURK_EXTERNAL_URL="", ASSAY_BASE_URL="", LOCAL_FAKES=["mturk"]
        ):
            yield running


def test_an_organiser_publishes_on_the_local_fake_and_opens_a_hit_as_a_made_up_worker(
    page, login, live_server, fake_mturk
):
    campaign = build_campaign(provider=CrowdCampaign.Provider.MTURK, batch_size=10, assignments=1)
    OrganiserFactory(username="org")
    login("org")

    page.goto(f"/crowd/campaigns/{campaign.name}/")
    expect(page.locator("#mturk-local-fake")).to_contain_text("make run")
    expect(page.locator("#mturk-target")).to_contain_text(f"HIT pages framed from {live_server.url}/")
    page.check("#id_publish-confirm")
    page.click("#action-publish button[type=submit]")
    page.wait_for_url(f"**/crowd/campaigns/{campaign.name}/")
    expect(page.locator(".messages")).to_contain_text("Published 1 HIT on local")
    worker_link = page.locator("#fake-workers a").first.get_attribute("href")
    assert worker_link and worker_link.startswith(fake_mturk.url)

    page.goto(worker_link)
    frame = page.frame_locator("#mturk-frame")
    frame.locator("html[data-hotkeys-ready]").wait_for(state="attached")

    expect(frame.locator("#crowd-progress")).to_have_text("Question 1 of 11")
    batch = campaign.batches.get()
    assert fake_mturk.fake.external_url(batch.hit_id).startswith(f"{live_server.url}/crowd/hit/")
