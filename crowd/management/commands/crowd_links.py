from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import CommandParser
from django.urls import reverse
from django.utils import timezone

from crowd.management.commands._crowd import CampaignCommand
from crowd.selectors import link_token


class Command(CampaignCommand):
    help = (
        "Print signed anonymous links for an in-platform campaign: one per batch and worker slot, so people "
        "without an account can take batches. The link carries the batch and a worker label, signed with SECRET_KEY, "
        "and is taken for CROWD_LINK_MAX_AGE seconds from now."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--base-url", default=getattr(settings, "MTURK_EXTERNAL_URL", "http://127.0.0.1:8000")
        )
        parser.add_argument("--prefix", default="anon", help="Worker labels are <prefix>-<batch>-<slot>.")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        base = options["base_url"].rstrip("/")
        expires = timezone.now() + timedelta(seconds=settings.CROWD_LINK_MAX_AGE)
        self.stderr.write(f"links expire at {expires:%Y-%m-%d %H:%M} UTC (CROWD_LINK_MAX_AGE)")
        for batch in campaign.batches.order_by("index"):
            for slot in range(1, batch.max_assignments + 1):
                label = f"{options['prefix']}-{batch.index}-{slot}"
                url = base + reverse("mturk:link-take", args=[link_token(batch=batch, label=label)])
                self.stdout.write(f"{batch.index}\t{label}\t{url}")
