"""Reads for crowd campaigns: the pairs to label, the next batch for a worker, signed links."""

from __future__ import annotations

from django.core import signing
from django.db.models import Count, F, Q, QuerySet

from annotation.models import Nugget, Response
from crowd.models import BatchItem, CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdWorker

HIT_SALT = "mturk.hit"
LINK_SALT = "mturk.link"
COUNTED_STATUSES = [
    CrowdAssignment.Status.ACCEPTED,
    CrowdAssignment.Status.SUBMITTED,
    CrowdAssignment.Status.APPROVED,
]


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


def batch_open_slots(*, batch: CrowdBatch) -> int:
    taken = batch.assignments.filter(status__in=COUNTED_STATUSES).count()
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


def hit_token(*, batch: CrowdBatch) -> str:
    return signing.dumps({"b": batch.id}, salt=HIT_SALT, compress=True)


def hit_batch_from_token(token: str) -> CrowdBatch | None:
    try:
        data = signing.loads(token, salt=HIT_SALT)
    except signing.BadSignature:
        return None
    return CrowdBatch.objects.select_related("campaign").filter(id=data.get("b")).first()


def link_token(*, batch: CrowdBatch, label: str) -> str:
    """An anonymous worker link: the batch and a label naming the worker, signed with SECRET_KEY."""
    return signing.dumps({"b": batch.id, "w": label}, salt=LINK_SALT, compress=True)


def link_from_token(token: str, *, max_age: int | None = None) -> tuple[CrowdBatch, str] | None:
    try:
        data = signing.loads(token, salt=LINK_SALT, max_age=max_age)
    except signing.BadSignature:
        return None
    batch = CrowdBatch.objects.select_related("campaign").filter(id=data.get("b")).first()
    if batch is None or not isinstance(data.get("w"), str):
        return None
    return batch, data["w"]
