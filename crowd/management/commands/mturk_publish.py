from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from core.wording import plural
from crowd.management.commands._crowd import CampaignCommand
from crowd.providers.mturk.services import campaign_publish


class Command(CampaignCommand):
    help = (
        "Publish a campaign's unpublished batches as MTurk HITs: one HIT type (title, description, reward, "
        "duration, auto-approval delay, the study's qualification requirements) and one ExternalQuestion HIT per "
        "batch pointing at our worker page. The sandbox unless --live; safe to run again."
    )
    uses_mturk = True

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--base-url",
            default=None,
            help="Public HTTPS root of this site that MTurk frames (default: MTURK_EXTERNAL_URL).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        client = self.get_client(options)
        base_url = options["base_url"] or getattr(settings, "MTURK_EXTERNAL_URL", "")
        if not base_url:
            raise CommandError(
                "Say where MTurk frames the HIT pages from: --base-url or MTURK_EXTERNAL_URL (ASSAY_BASE_URL), "
                "this site's address as workers open it"
            )
        if not base_url.startswith("https://") and not client.is_local:
            raise CommandError(
                "MTurk only frames HTTPS pages: set MTURK_EXTERNAL_URL or --base-url to https://…"
            )
        published = self.run(lambda: campaign_publish(campaign=campaign, client=client, base_url=base_url))
        target = "live" if client.live else ("local" if client.is_local else "sandbox")
        self.stdout.write(f"published {plural(len(published), 'HIT')} on {target} ({client.endpoint_url})")
        for batch in published:
            self.stdout.write(f"  batch {batch.index}: {batch.hit_id}")
