from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.wording import plural
from crowd.aggregation.selectors import METHODS
from crowd.aggregation.services import (
    campaign_fit_store,
    labels_aggregate,
    nugget_aggregate_summary,
    nugget_labels_aggregate,
)
from crowd.campaigns.services import batches_extend
from crowd.management.commands._crowd import CampaignCommand
from crowd.models import CrowdCampaign


class Command(CampaignCommand):
    help = (
        "Aggregate a campaign's answers into NtR labels of its crowd judge: answers of workers who failed the "
        "batch's test question are discarded, the majority of the rest is the label; ties and pairs with fewer "
        "than --min-votes votes are listed as unresolved (no label). --extend N gives their batches N more "
        "assignments (on MTurk too, with --mturk). A nugget-support campaign (three-way questions) is aggregated "
        "into nugget assignments by --method: majority (the same rule), or ds, mace or glad (Dawid-Skene, MACE, "
        "GLAD from crowd-kit, fitted to every confirmed answer; each writes its own judge, <label judge>-<method>); "
        "only that method is fitted. --compare also fits all four and stores every method's accuracy on the test "
        "questions and each worker's reliability for the campaign page (CROWD_MACE_RESTARTS and the other "
        "CROWD_*_ITERATIONS settings bound its time)."
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
        parser.add_argument(
            "--method",
            choices=METHODS,
            default="majority",
            help="Nugget-support campaigns: how answers become labels (default majority).",
        )
        parser.add_argument(
            "--compare",
            action="store_true",
            help="Nugget-support campaigns: also fit every method and store their comparison for the page.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        if campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT:
            self._nuggets(campaign, options)
            return
        if options["method"] != "majority":
            raise CommandError(
                f"campaign {campaign.name} asks yes/no questions: only --method majority applies"
            )
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

    def _nuggets(self, campaign: CrowdCampaign, options: dict[str, Any]) -> None:
        if options["extend"]:
            raise CommandError("--extend applies to yes/no campaigns for now, not to nugget-support ones")
        result = self.run(
            lambda: nugget_labels_aggregate(
                campaign=campaign, method=options["method"], min_votes=options["min_votes"]
            )
        )
        self.stdout.write(nugget_aggregate_summary(result))
        if not options["compare"]:
            return
        report = self.run(lambda: campaign_fit_store(campaign=campaign))
        for method, score in report.get("methods", {}).items():
            accuracy = "n/a" if score["accuracy"] is None else f"{score['accuracy']:.3f}"
            self.stdout.write(
                f"  {method}: {score['correct']} of {plural(score['scored'], 'test question')} right ({accuracy})"
            )
