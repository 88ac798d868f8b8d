from __future__ import annotations

from typing import Any

from crowd.management.commands._crowd import CampaignCommand
from crowd.services import campaign_sync


class Command(CampaignCommand):
    help = (
        "Fetch submitted assignments of a campaign's HITs (paginated ListAssignmentsForHIT), parse their answer "
        "XML and store each worker's answers. Idempotent: running it again adds no rows."
    )
    uses_mturk = True

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        client = self.get_client(options)
        result = self.run(lambda: campaign_sync(campaign=campaign, client=client))
        self.stdout.write(f"{result.seen} assignments seen, {result.stored} stored")
        for problem in result.skipped:
            self.stderr.write(f"skipped {problem}")
