"""The site's own address: without ASSAY_BASE_URL (or MTURK_EXTERNAL_URL) the campaign page publishes HITs
framed from the address it was asked at, so a server on another port than 8000 frames itself, not whatever
listens on 8000; commands, which have no request, ask for the address or say what they assume."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from crowd.models import CrowdCampaign
from tests.conftest import REPO
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db

HOST = "127.0.0.1:8123"


@pytest.fixture
def fake_mturk_unaddressed(fake_mturk, settings):
    """The local MTurk with neither ASSAY_BASE_URL nor MTURK_EXTERNAL_URL set: the site's address is unknown."""
    settings.ASSAY_BASE_URL = ""
    settings.MTURK_EXTERNAL_URL = ""
    return fake_mturk


def test_it_leaves_the_site_address_unset_by_default():
    env = {k: v for k, v in os.environ.items() if k not in {"ASSAY_BASE_URL", "MTURK_EXTERNAL_URL"}}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print(repr(settings.ASSAY_BASE_URL), repr(settings.MTURK_EXTERNAL_URL))",
        ],
        cwd=REPO,
        env=env | {"DJANGO_SETTINGS_MODULE": "assay.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["''", "''"]


def test_it_publishes_hits_framed_from_the_address_the_page_was_asked_at(client, fake_mturk_unaddressed):
    campaign = build_campaign(provider=CrowdCampaign.Provider.MTURK, assignments=1)
    client.force_login(OrganiserFactory())

    page = client.get(reverse("crowd:campaign", args=[campaign.name]), HTTP_HOST=HOST)
    published = client.post(
        reverse("crowd:campaign-publish", args=[campaign.name]), {"publish-confirm": "on"}, HTTP_HOST=HOST
    )

    assert page.status_code == 200
    html = page.content.decode()
    assert f"HIT pages framed from http://{HOST}/." in html
    assert 'id="mturk-local-fake"' in html
    assert published.status_code == 302
    hits = list(campaign.batches.exclude(hit_id="").values_list("hit_id", flat=True))
    assert hits and len(hits) == campaign.batches.count()
    for hit_id in hits:
        assert fake_mturk_unaddressed.fake.external_url(hit_id).startswith(f"http://{HOST}/crowd/hit/")


def test_mturk_publish_asks_for_the_address_when_none_is_set(fake_mturk_unaddressed):
    campaign = build_campaign(provider=CrowdCampaign.Provider.MTURK, assignments=1)

    with pytest.raises(CommandError, match="--base-url or MTURK_EXTERNAL_URL"):
        call_command("mturk_publish", campaign=campaign.name, stdout=io.StringIO())

    assert not campaign.batches.exclude(hit_id="").exists()


def test_crowd_links_says_which_address_it_assumes_without_one(settings):
    settings.ASSAY_BASE_URL = ""
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)
    out, err = io.StringIO(), io.StringIO()

    call_command("crowd_links", campaign=campaign.name, stdout=out, stderr=err)

    assert "ASSAY_BASE_URL is not set: links start with http://127.0.0.1:8000" in err.getvalue()
    assert all(
        line.split("\t")[2].startswith("http://127.0.0.1:8000/") for line in out.getvalue().splitlines()
    )
