from __future__ import annotations

from typing import Any

from crowd.campaigns.report import campaign_report
from crowd.management.commands._crowd import CampaignCommand


class Command(CampaignCommand):
    help = (
        "Print a campaign's crowd report: per worker test accuracy, answers and median seconds per HIT; per batch "
        "status; cost (rewards and bonuses, plus MTurk's 20% fee on MTurk); Krippendorff's alpha among workers "
        "who passed the tests."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        report = campaign_report(campaign=campaign)
        self.stdout.write(f"Workers of {campaign.name} ({campaign.get_provider_display()})")
        self.stdout.write("worker\tHITs\tanswers\ttests_right/tests\tmedian_seconds")
        for w in report.workers:
            median = "-" if w.median_seconds is None else f"{w.median_seconds:.0f}"
            self.stdout.write(
                f"{w.worker_id}\t{w.assignments}\t{w.answers}\t{w.tests_right}/{w.tests}\t{median}"
            )
        self.stdout.write("")
        self.stdout.write(f"Batches of {campaign.name}")
        self.stdout.write("batch\tstatus\tHIT\tanswered/wanted\tpassed\tprovisional")
        for b in report.batches:
            self.stdout.write(
                f"{b.index}\t{b.status}\t{b.hit_id or '-'}\t{b.submitted}/{b.max_assignments}\t{b.passed}\t{b.provisional}"
            )
        self.stdout.write("")
        alpha = "n/a" if report.alpha is None else f"{report.alpha:.3f}"
        fee = f" + {report.fee_total} MTurk fee" if report.has_fee else ""
        self.stdout.write(
            f"cost: {report.reward_total} rewards + {report.bonus_total} bonuses{fee} = "
            f"{report.cost_total} USD; alpha {alpha}"
        )
