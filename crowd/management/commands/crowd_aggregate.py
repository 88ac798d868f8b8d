from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.wording import plural
from crowd.management.commands._crowd import CampaignCommand
from crowd.services.campaigns import batches_extend, labels_aggregate


class Command(CampaignCommand):
    help = (
        "Aggregate a campaign's answers into NtR labels of its crowd judge: answers of workers who failed the "
        "batch's test question are discarded, the majority of the rest is the label; ties and pairs with fewer "
        "than --min-votes votes are listed as unresolved (no label). --extend N gives their batches N more "
        "assignments (on MTurk too, with --mturk)."
    )
    uses_mturk = True

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--min-votes",
            type=int,
            default=1,
            help="Counted votes (of workers who passed the tests) a pair needs; fewer leaves it unresolved.",
        )
        parser.add_argument("--extend", type=int, default=0, help="More assignments for unresolved batches.")
        parser.add_argument("--mturk", action="store_true", help="With --extend: also add them on MTurk.")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        result = self.run(lambda: labels_aggregate(campaign=campaign, min_votes=options["min_votes"]))
        self.stdout.write(
            f"{plural(result.labelled, 'label')} as {campaign.label_judge.name} ({result.yes} yes, {result.no} no), "
            f"{len(result.unresolved)} unresolved, {plural(result.discarded_assignments, 'assignment')} discarded"
        )
        for item in result.unresolved:
            self.stdout.write(
                f"  unresolved: batch {item.batch.index} #{item.position + 1} {item.response} ~ {item.nugget.key}"
            )
        if options["extend"] and result.unresolved:
            client = self.get_client(options) if options["mturk"] else None
            count = self.run(
                lambda: batches_extend(
                    campaign=campaign, items=result.unresolved, extra=options["extend"], client=client
                )
            )
            self.stdout.write(
                f"{plural(count, 'batch')} extended by {plural(options['extend'], 'assignment')}"
            )
