from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.wording import plural
from crowd.management.commands._crowd import CampaignCommand
from crowd.providers.mturk.services import campaign_qualification_set


class Command(CampaignCommand):
    help = (
        "Make a campaign's MTurk qualification test from its test questions (a QuestionForm test and an "
        "AnswerKey scoring the share right x 100); the HITs published afterwards require at least --threshold. "
        "Run again, it keeps the test and sets the threshold for the HITs published from then on."
    )
    uses_mturk = True

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--threshold", type=int, required=True, help="Least share of the test right x 100 (0 to 100)."
        )
        parser.add_argument(
            "--questions", type=int, default=5, help="Test questions in the test (default 5)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        client = self.get_client(options)
        qualification, made = self.run(
            lambda: campaign_qualification_set(
                campaign=campaign,
                client=client,
                threshold=options["threshold"],
                questions=options["questions"],
            )
        )
        what = "made" if made else "kept"
        self.stdout.write(
            f"qualification test {qualification.qualification_type_id} {what} ({qualification.status}, "
            f"{plural(qualification.questions, 'question')}); HITs published from now on require "
            f">= {qualification.threshold}"
        )
