from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.wording import plural
from crowd.management.commands._crowd import CampaignCommand
from crowd.models import CrowdCampaign
from crowd.providers.mturk.services import campaign_bonus


class Command(CampaignCommand):
    help = (
        "Pay a bonus (MTurk SendBonus) once to every approved assignment of a campaign that passed its test "
        "questions; run mturk_review first. Safe to run again: assignments already given a bonus are skipped, "
        "and MTurk refuses a second payment with the same token. Bonuses count in crowd_report's cost, with "
        "MTurk's 20% fee. In-platform campaigns only record the amount."
    )
    uses_mturk = True

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--amount", required=True, help="Bonus per assignment in USD, such as 0.10.")
        parser.add_argument(
            "--reason", required=True, help="The message MTurk shows the worker with the bonus."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        client = self.get_client(options) if campaign.provider == CrowdCampaign.Provider.MTURK else None
        result = self.run(
            lambda: campaign_bonus(
                campaign=campaign, client=client, amount=options["amount"], reason=options["reason"]
            )
        )
        self.stdout.write(f"{plural(result.paid, 'bonus')} paid, {result.total} USD before MTurk's fee")
