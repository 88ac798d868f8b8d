from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.wording import plural
from crowd.management.commands._crowd import CampaignCommand
from crowd.models import CrowdAssignment
from crowd.providers.mturk.services import REJECT_FEEDBACK, campaign_review


class Command(CampaignCommand):
    help = (
        "Review a campaign's submitted assignments. Policy: approve every assignment; with --reject-failed, "
        "reject those that answered a test question wrongly, with this feedback: " + REJECT_FEEDBACK + " "
        "--block-failed gives failed workers a qualification that keeps them out of the campaign's later HITs."
    )
    uses_mturk = True

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--reject-failed", action="store_true", help="Reject assignments that failed a test."
        )
        parser.add_argument("--block-failed", action="store_true", help="Block workers who failed a test.")
        parser.add_argument("--dry-run", action="store_true", help="Say what would be done, change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        if options["dry_run"]:
            pending = CrowdAssignment.objects.filter(batch__campaign=campaign, status="Submitted")
            failed = pending.filter(passed_tests=False).count()
            verb = "reject" if options["reject_failed"] else "approve"
            self.stdout.write(
                f"would approve {pending.count() - failed} and {verb} {failed} that failed a test"
            )
            return
        client = self.get_client(options)
        result = self.run(
            lambda: campaign_review(
                campaign=campaign,
                client=client,
                reject_failed=options["reject_failed"],
                block_failed=options["block_failed"],
            )
        )
        self.stdout.write(
            f"{result.approved} approved, {result.rejected} rejected, {plural(result.blocked, 'worker')} blocked"
        )
