"""Bonuses: SendBonus request shape, paid once per passing approved assignment, counted in the cost."""

from __future__ import annotations

import io
import urllib.parse
from decimal import Decimal

import pytest
from botocore.stub import Stubber
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from crowd.campaigns.report import campaign_report
from crowd.models import CrowdAssignment
from crowd.providers.mturk.client import MTurkClient
from devtools.mturk_server import FakeMTurkServer
from tests.crowd.crowd_helpers import build_campaign

pytestmark = pytest.mark.django_db


def test_it_sends_a_bonus_with_the_fields_mturk_requires(settings):
    settings.MTURK_ENDPOINT_URL = ""
    client = MTurkClient(sleep=lambda _s: None)
    with Stubber(client.boto) as stub:
        stub.add_response(
            "send_bonus",
            {},
            {
                "WorkerId": "W1",
                "AssignmentId": "A1",
                "BonusAmount": "0.10",
                "Reason": "Careful work",
                "UniqueRequestToken": "t1",
            },
        )
        client.bonus_send(
            worker_id="W1", assignment_id="A1", amount="0.10", reason="Careful work", unique_token="t1"
        )
        stub.assert_no_pending_responses()


def test_it_pays_passing_approved_workers_once_and_counts_bonuses_and_fee_in_the_cost():
    with (
        FakeMTurkServer() as server,
        override_settings(MTURK_ENDPOINT_URL=server.url, MTURK_EXTERNAL_URL="https://testserver"),
    ):
        campaign = build_campaign(batch_size=10)
        call_command("mturk_publish", campaign=campaign.name)
        (batch,) = campaign.batches.all()
        batch.refresh_from_db()
        items = list(batch.items.select_related("test_question").order_by("position"))
        for worker, honest in (("WA", True), ("WB", True), ("WC", False)):
            query = urllib.parse.parse_qs(
                urllib.parse.urlsplit(server.fake.worker_accept(batch.hit_id, worker)).query
            )
            fields = {"assignmentId": query["assignmentId"][0]}
            for item in items:
                vote = item.test_question.answer == honest if item.is_test else True
                fields[f"q{item.position + 1}"] = "yes" if vote else "no"
            server.fake.external_submit(fields)
        call_command("mturk_sync", campaign=campaign.name)
        call_command("mturk_review", campaign=campaign.name)
        with pytest.raises(CommandError, match="reason"):
            call_command("mturk_bonus", campaign=campaign.name, amount="0.10", reason=" ")

        out = io.StringIO()
        call_command("mturk_bonus", campaign=campaign.name, amount="0.10", reason="Careful work", stdout=out)
        call_command("mturk_bonus", campaign=campaign.name, amount="0.10", reason="Careful work", stdout=out)

        assert out.getvalue().splitlines() == [
            "2 bonuses paid, 0.20 USD before MTurk's fee",
            "0 bonuses paid, 0.00 USD before MTurk's fee",
        ]
        paid = sorted((b["WorkerId"], b["BonusAmount"], b["Reason"]) for b in server.state.bonuses)
        assert paid == [("WA", "0.10", "Careful work"), ("WB", "0.10", "Careful work")]
        assert dict(CrowdAssignment.objects.values_list("worker__worker_id", "bonus")) == {
            "WA": Decimal("0.10"),
            "WB": Decimal("0.10"),
            "WC": Decimal("0.00"),
        }
        report = campaign_report(campaign=campaign)
        rewards = Decimal(str(campaign.reward)) * 3
        assert (report.reward_total, report.bonus_total) == (rewards, Decimal("0.20"))
        assert report.cost_total == rewards + Decimal("0.20") + (
            (rewards + Decimal("0.20")) * Decimal("0.2")
        ).quantize(Decimal("0.01"))
