from __future__ import annotations

from typing import Any

from core.wording import plural
from crowd.management.commands._crowd import CampaignCommand
from crowd.providers.mturk.services import campaign_sync


class Command(CampaignCommand):
    help = (
        "Fetch submitted assignments of a campaign's HITs (paginated ListAssignmentsForHIT), parse their answer "
        "XML and store each worker's answers. What MTurk reports confirms (or replaces) the provisional answers "
        "posted to the HIT page; only confirmed answers vote. A batch whose HIT MTurk no longer knows is marked "
        "missing and reported, and the other batches are synced. Idempotent: running it again adds no rows."
    )
    uses_mturk = True

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        client = self.get_client(options)
        result = self.run(lambda: campaign_sync(campaign=campaign, client=client))
        self.stdout.write(
            f"{plural(result.seen, 'assignment')} seen, {result.stored} stored, "
            f"{plural(result.unconfirmed, 'provisional answer')} not reported by MTurk"
        )
        for problem in result.skipped:
            self.stderr.write(f"skipped {problem}")
        for problem in result.missing:
            self.stderr.write(f"missing on MTurk, batch marked missing: {problem}")
        for problem in result.failed:
            self.stderr.write(f"not synced, try again: {problem}")
