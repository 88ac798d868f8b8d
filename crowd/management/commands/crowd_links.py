from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from core.csv_safe import csv_writer
from crowd.management.commands._crowd import CampaignCommand
from crowd.providers.links.selectors import MAX_LINK_LABEL, campaign_links

# Where `make run` serves when not told otherwise: a command has no request to read the address from.
MAKE_RUN_URL = "http://127.0.0.1:8000"


class Command(CampaignCommand):
    help = (
        "Print signed anonymous links for an in-platform campaign: one per batch and worker slot, so people "
        "without an account can take batches. The link carries the batch and a worker label, signed with SECRET_KEY, "
        "and is taken for CROWD_LINK_MAX_AGE seconds from now. The campaign page makes the same links. "
        "Tab-separated, with a label a spreadsheet would read as a formula written as text ('=cmd-0-1)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--base-url",
            default=None,
            help="The address workers open this site at, e.g. https://assay.example.org "
            "(default: ASSAY_BASE_URL, http://127.0.0.1:8000 as `make run` serves it).",
        )
        parser.add_argument("--prefix", default="anon", help="Worker labels are <prefix>-<batch>-<slot>.")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        base = options["base_url"] or settings.ASSAY_BASE_URL
        if not base:
            base = MAKE_RUN_URL
            self.stderr.write(
                f"ASSAY_BASE_URL is not set: links start with {base}, where `make run` serves by default; "
                "--base-url or ASSAY_BASE_URL for the address workers open"
            )
        expires = timezone.now() + timedelta(seconds=settings.CROWD_LINK_MAX_AGE)
        self.stderr.write(f"links expire at {expires:%Y-%m-%d %H:%M} UTC (CROWD_LINK_MAX_AGE)")
        # Pasted into a spreadsheet like every other file Assay writes, so written the same formula-safe way.
        links = campaign_links(campaign=campaign, base_url=base, prefix=options["prefix"])
        if any(len(label) > MAX_LINK_LABEL for _, label, _ in links):
            # Such a link names a worker the database cannot hold: every one would be refused when opened.
            raise CommandError(f"--prefix is too long: a worker label is at most {MAX_LINK_LABEL} characters")
        out = io.StringIO()
        writer = csv_writer(out, delimiter="\t", lineterminator="\n")
        writer.writerows(links)
        self.stdout.write(out.getvalue(), ending="")
