"""Reads for crowd campaigns: the pairs to label, a batch's questions, the campaigns with their counts."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, QuerySet

from annotation.models import Nugget, Response
from crowd.answers.selectors import COUNTED_STATUSES
from crowd.models import BatchItem, CrowdAssignment, CrowdBatch, CrowdCampaign


def campaign_pairs(*, campaign: CrowdCampaign) -> list[tuple[Response, Nugget]]:
    """Chosen turns x chosen runs' responses x the turn's gold nuggets, in a stable order."""
    turn_ids = list(campaign.turns.values_list("id", flat=True))
    nuggets = Nugget.objects.filter(judge=campaign.nugget_judge, turn_id__in=turn_ids)
    if campaign.skip_duplicates:
        nuggets = nuggets.filter(duplicate_of__isnull=True)
    by_turn: dict[int, list[Nugget]] = {}
    for nugget in nuggets.order_by("turn_id", "id"):
        by_turn.setdefault(nugget.turn_id, []).append(nugget)
    responses = (
        Response.objects.filter(turn_id__in=turn_ids, run__in=campaign.runs.all())
        .select_related("run", "turn")
        .order_by("turn__turn_id", "run__name", "rank")
    )
    return [(response, nugget) for response in responses for nugget in by_turn.get(response.turn_id, [])]


def batch_items(*, batch: CrowdBatch) -> QuerySet[BatchItem]:
    return batch.items.select_related("response", "nugget", "test_question", "response__turn").order_by(
        "position"
    )


@dataclass(frozen=True)
class CampaignRow:
    """A campaign as the campaign lists show it: with its batches and confirmed answers counted."""

    campaign: CrowdCampaign
    n_batches: int
    n_answered: int


def campaigns_overview(*, limit: int | None = None) -> list[CampaignRow]:
    """Every campaign (the newest `limit` when given) with its collection, crowd judge and counts, newest
    first: `n_batches`, and `n_answered` (its confirmed assignments).

    One grouped query per count: counting batches and their assignments in one query joins both to every
    campaign, a product as large as all the campaigns' assignments, to be undone with distinct counts."""
    campaigns = CrowdCampaign.objects.select_related("collection", "label_judge")
    chosen = list(campaigns[:limit] if limit is not None else campaigns)
    ids = [c.pk for c in chosen]
    batches = dict(
        CrowdBatch.objects.filter(campaign_id__in=ids)
        .values_list("campaign_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    answered = dict(
        CrowdAssignment.objects.filter(batch__campaign_id__in=ids, status__in=COUNTED_STATUSES)
        .values_list("batch__campaign_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return [CampaignRow(c, batches.get(c.pk, 0), answered.get(c.pk, 0)) for c in chosen]


def campaigns_recent(*, limit: int) -> QuerySet[CrowdCampaign]:
    """The newest campaigns with their collections, as the organiser's home lists them."""
    return CrowdCampaign.objects.select_related("collection").order_by("-id")[:limit]
