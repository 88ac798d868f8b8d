from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.formats.base import ImportFailed
from core.wording import plural
from crowd.answers.io import input_csv, results_csv, results_csv_import
from crowd.management.commands._crowd import CampaignCommand


class Command(CampaignCommand):
    help = (
        "MTurk CSV files of a campaign: export-input writes the batch input CSV (one row per batch, "
        "response_<n>/nugget_<n>); export-results writes the results CSV (HITId, AssignmentId, WorkerId, ..., "
        "Input.*, Answer.*); import-results loads a results CSV downloaded from MTurk (all or nothing, idempotent)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("action", choices=["export-input", "export-results", "import-results"])
        parser.add_argument("path", help="File to write, or the results CSV to read; '-' writes to stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = self.get_campaign(options["campaign"])
        action, path = options["action"], options["path"]
        if action == "import-results":
            try:
                count = self.run(lambda: results_csv_import(campaign=campaign, path=path))
            except ImportFailed as exc:
                raise CommandError(f"nothing was imported:\n{exc}") from None
            self.stdout.write(f"{plural(count, 'assignment')} imported from {path}")
            return
        text = input_csv(campaign=campaign) if action == "export-input" else results_csv(campaign=campaign)
        if path == "-":
            self.stdout.write(text, ending="")
        else:
            Path(path).write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {path}")
