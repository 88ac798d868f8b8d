"""`campaign_report`: every agreement table of a collection in one printable HTML page (or JSON)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import CommandParser
from django.template.loader import render_to_string

from annotation.commands import CollectionCommand
from judging.agreement.reports import campaign_report
from judging.measures.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED


class Command(CollectionCommand):
    help = (
        "Write the agreement report of a whole campaign: every pair of judges on relevance (graded and binary), "
        "PTKB, nuggets (NtN), crowd NtR and support per condition, side by side as in the papers. HTML by default "
        "(printable, self-contained), or JSON."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--format", choices=["html", "json"], default="html")
        parser.add_argument("--output", help="Write to this file instead of standard output.")
        parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED)

    def handle(self, *args, collection, format, output, resamples, seed, **options):
        report = campaign_report(collection=self.get_collection(collection), resamples=resamples, seed=seed)
        if format == "json":
            text = json.dumps(report, indent=2)
        else:
            text = render_to_string("agreement/campaign.html", {"report": report, "standalone": True})
        if output:
            Path(output).write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {output}")
        else:
            self.stdout.write(text)
