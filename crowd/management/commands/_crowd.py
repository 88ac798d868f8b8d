"""What the crowd commands share: finding a campaign, building the MTurk client, turning errors into CommandError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.commands import named
from crowd.errors import CrowdError
from crowd.models import CrowdCampaign
from crowd.providers.mturk.client import MTurkClient, MTurkError


class CampaignCommand(BaseCommand):
    """A command about one campaign named by --campaign."""

    uses_mturk = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="Name of the crowd campaign.")
        if self.uses_mturk:
            parser.add_argument(
                "--live",
                action="store_true",
                help="Use the live MTurk marketplace (real money). Without it the sandbox, or MTURK_ENDPOINT_URL.",
            )
            parser.add_argument(
                "--endpoint-url", default=None, help="An MTurk-compatible endpoint (overrides settings)."
            )

    def get_campaign(self, name: str) -> CrowdCampaign:
        return named(
            CrowdCampaign.objects.select_related("collection", "label_judge"), name, kind="crowd campaign"
        )

    def get_client(self, options: dict[str, Any]) -> MTurkClient:
        live = bool(options.get("live"))
        if getattr(settings, "MTURK_LIVE", False) and not live:
            raise CommandError("MTURK_LIVE is set: pass --live to confirm you mean the live marketplace")
        return MTurkClient(live=live, endpoint_url=options.get("endpoint_url"))

    def run(self, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except (CrowdError, MTurkError) as exc:
            raise CommandError(str(exc)) from None
