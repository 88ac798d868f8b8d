"""Publishing when MTurk's answer to CreateHIT is lost on the way back.

A loopback proxy in front of the local MTurk server drops the answer to one CreateHITWithHITType call:
the HIT exists on MTurk, the client only sees a closed connection and retries with the same
UniqueRequestToken, which MTurk refuses. Publishing finds the HIT it made and goes on.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from crowd.models import CrowdBatch
from devtools.mturk_proxy import DroppingProxy
from devtools.mturk_server import FakeMTurkServer
from tests.crowd.crowd_helpers import build_campaign

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("error_names_the_hit", [True, False], ids=["by-get-hit", "by-list-hits"])
def test_a_lost_create_hit_answer_is_recovered_and_publishing_goes_on(error_names_the_hit):
    with (
        FakeMTurkServer() as server,
        DroppingProxy(server.url, drop={"CreateHITWithHITType": 1}) as proxy,
        override_settings(MTURK_ENDPOINT_URL=proxy.url, MTURK_EXTERNAL_URL="https://testserver"),
    ):
        server.state.token_error_names_hit = error_names_the_hit
        campaign = build_campaign()
        out = StringIO()

        call_command("mturk_publish", campaign=campaign.name, stdout=out)

        assert proxy.dropped == ["CreateHITWithHITType"]
        assert "published 2 HITs" in out.getvalue()
        batches = list(campaign.batches.order_by("index"))
        assert [b.status for b in batches] == [CrowdBatch.Status.PUBLISHED] * 2
        assert sorted(b.hit_id for b in batches) == sorted(server.state.hits)  # one HIT each, no double
        first = server.state.hits[batches[0].hit_id]
        assert first["RequesterAnnotation"] == f"{campaign.name}:0 assay-{campaign.id}-{batches[0].id}"
        # A second run has nothing left to publish and changes nothing.
        call_command("mturk_publish", campaign=campaign.name, stdout=StringIO())
        assert len(server.state.hits) == 2


def test_a_used_token_whose_hit_cannot_be_found_fails_with_the_reason():
    with (
        FakeMTurkServer() as server,
        override_settings(MTURK_ENDPOINT_URL=server.url, MTURK_EXTERNAL_URL="https://testserver"),
    ):
        server.state.token_error_names_hit = False
        campaign = build_campaign()
        batch = campaign.batches.order_by("index").first()
        server.state.unique_tokens[f"assay-{campaign.id}-{batch.id}"] = "3HSOMEONEELSES"

        with pytest.raises(
            CommandError, match="no HIT of type .* with annotation .* was found to recover it"
        ):
            call_command("mturk_publish", campaign=campaign.name, stdout=StringIO())
        batch.refresh_from_db()
        assert batch.hit_id == ""
