from __future__ import annotations

from typing import Any

from core.wording import plural
from crowd.management.commands._crowd import CampaignCommand
from crowd.providers.mturk.services import campaign_expire


class Command(CampaignCommand):
    help = (
        "Expire a campaign's published HITs at once, so no new worker can accept them (answers given stay)."
    )
    uses_mturk = True

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        client = self.get_client(options)
        count = self.run(lambda: campaign_expire(campaign=campaign, client=client))
        self.stdout.write(f"{plural(count, 'HIT')} expired")
