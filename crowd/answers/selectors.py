"""Reads of crowd answers: the places a batch has left, the batch a worker answers next, who answered."""

from __future__ import annotations

from django.db.models import Count, F, Q

from crowd.models import VOTING_STATUSES, CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdWorker

# Provisional answers from the HIT page take no place: anyone could fill a batch with made-up ids.
COUNTED_STATUSES = VOTING_STATUSES


def batch_open_slots(*, batch: CrowdBatch) -> int:
    taken = batch.assignments.voting().count()
    return max(0, batch.max_assignments - taken)


def batch_next_for_worker(*, worker: CrowdWorker) -> CrowdBatch | None:
    """The first in-platform batch with a free slot that this worker has not done."""
    return (
        CrowdBatch.objects.filter(
            campaign__provider=CrowdCampaign.Provider.PLATFORM, status=CrowdBatch.Status.OPEN
        )
        .exclude(assignments__worker=worker)
        .annotate(taken=Count("assignments", filter=Q(assignments__status__in=COUNTED_STATUSES)))
        .filter(taken__lt=F("max_assignments"))
        .order_by("campaign_id", "index")
        .first()
    )


def batch_with_room(*, campaign: CrowdCampaign, worker: CrowdWorker) -> CrowdBatch | None:
    """The in-platform batch of a campaign nearest to complete that still has a place this worker has not
    taken: filling one batch before the next gives each its majority sooner."""
    if campaign.provider != CrowdCampaign.Provider.PLATFORM:
        return None
    return (
        CrowdBatch.objects.filter(campaign=campaign, status=CrowdBatch.Status.OPEN)
        .exclude(assignments__worker=worker)
        .annotate(taken=Count("assignments", filter=Q(assignments__status__in=COUNTED_STATUSES)))
        .filter(taken__lt=F("max_assignments"))
        .select_related("campaign")
        .order_by("-taken", "index")
        .first()
    )


def worker_answered_campaign(*, worker: CrowdWorker, campaign: CrowdCampaign) -> bool:
    return CrowdAssignment.objects.filter(batch__campaign=campaign, worker=worker).voting().exists()


def campaign_places_left(*, campaign: CrowdCampaign) -> int:
    """Places of the campaign's batches still without a confirmed answer: how many participants a panel
    must still send, one batch each."""
    taken = campaign.batches.annotate(
        taken=Count("assignments", filter=Q(assignments__status__in=COUNTED_STATUSES))
    ).values_list("taken", "max_assignments")
    return sum(max(0, most - n) for n, most in taken)
