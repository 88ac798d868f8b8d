"""What crowd shows on annotation's home page: its campaigns (organisers) and the crowd batches as a kind
of work (everybody), registered in core.registry at start-up because annotation imports nothing from
this app."""

from __future__ import annotations

from django.urls import reverse

from core.registry import HOME_SECTIONS, WORK_LINKS, Link, Section
from crowd.models import CrowdCampaign


def campaigns_section() -> Section:
    campaigns = CrowdCampaign.objects.select_related("collection").order_by("-id")[:10]
    return Section(
        title="Crowd campaigns",
        id="home-campaigns",
        links=[
            Link(
                label=campaign.name,
                url=reverse("crowd:campaign", args=[campaign.name]),
                note=f"{campaign.collection.name} · {campaign.get_provider_display()}",
            )
            for campaign in campaigns
        ],
    )


def crowd_work_link() -> Link:
    return Link(
        label="Crowd",
        url=reverse("crowd:home"),
        note="does a response contain a nugget? Batches of 11 questions.",
    )


def register() -> None:
    HOME_SECTIONS.register(campaigns_section)
    WORK_LINKS.register(crowd_work_link)
