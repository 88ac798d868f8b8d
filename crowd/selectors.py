"""Reads for crowd campaigns: the pairs to label, the next batch for a worker, signed links."""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.db.models import Count, F, Q, QuerySet
from django.urls import reverse

from annotation.models import Nugget, Response
from crowd.models import (
    VOTING_STATUSES,
    BatchItem,
    CrowdAssignment,
    CrowdBatch,
    CrowdCampaign,
    CrowdWorker,
)

HIT_SALT = "mturk.hit"
LINK_SALT = "mturk.link"
# Provisional answers from the HIT page take no place: anyone could fill a batch with made-up ids.
COUNTED_STATUSES = VOTING_STATUSES
# A HIT page link outlives the HIT by this long, so a worker who accepted at the last moment can finish.
HIT_LINK_GRACE_SECONDS = 24 * 3600


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


def hit_token(*, batch: CrowdBatch) -> str:
    """The HIT page's address for a batch, signed with SECRET_KEY and the time it was made."""
    return signing.dumps({"b": batch.id}, salt=HIT_SALT, compress=True)


def hit_batch_from_token(token: str) -> CrowdBatch | None:
    """The batch of a HIT page link, or None when it is tampered with or older than the HIT can live."""
    try:
        data = signing.loads(token, salt=HIT_SALT)
        batch = CrowdBatch.objects.select_related("campaign").filter(id=data.get("b")).first()
        if batch is None:
            return None
        campaign = batch.campaign
        max_age = campaign.lifetime_seconds + campaign.duration_seconds + HIT_LINK_GRACE_SECONDS
        signing.loads(token, salt=HIT_SALT, max_age=max_age)
    except signing.BadSignature:
        return None
    return batch


def link_token(*, batch: CrowdBatch, label: str) -> str:
    """An anonymous worker link: the batch and a label naming the worker, signed with SECRET_KEY and the
    time it was made; it is taken for CROWD_LINK_MAX_AGE seconds."""
    return signing.dumps({"b": batch.id, "w": label}, salt=LINK_SALT, compress=True)


class LinkExpired(Exception):
    """A well-signed anonymous link older than CROWD_LINK_MAX_AGE."""


def link_worker_id(label: str) -> str:
    """The id of the worker who takes a link: the link's label, marked as a link's."""
    return f"link:{label}"


# A label whose worker id PostgreSQL could not store: longer than the column, or holding a NUL.
MAX_LINK_LABEL = (CrowdWorker._meta.get_field("worker_id").max_length or 0) - len(link_worker_id(""))


def link_from_token(token: str, *, max_age: int | None = None) -> tuple[CrowdBatch, str] | None:
    """The batch and worker label of a link; None when tampered with; LinkExpired when too old."""
    age = settings.CROWD_LINK_MAX_AGE if max_age is None else max_age
    try:
        data = signing.loads(token, salt=LINK_SALT, max_age=age)
    except signing.SignatureExpired:
        raise LinkExpired(f"this link is older than {age} seconds") from None
    except signing.BadSignature:
        return None
    label = data.get("w")
    # A label becomes a worker id (link_worker_id): one the database could not store is no worker's link.
    if not isinstance(label, str) or "\x00" in label or len(label) > MAX_LINK_LABEL:
        return None
    batch = CrowdBatch.objects.select_related("campaign").filter(id=data.get("b")).first()
    return None if batch is None else (batch, label)


def campaigns_overview(*, limit: int | None = None) -> list[CrowdCampaign]:
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
    for campaign in chosen:
        campaign.n_batches = batches.get(campaign.pk, 0)  # type: ignore[attr-defined]
        campaign.n_answered = answered.get(campaign.pk, 0)  # type: ignore[attr-defined]
    return chosen


def campaign_links(*, campaign: CrowdCampaign, base_url: str, prefix: str) -> list[tuple[int, str, str]]:
    """(batch index, worker label, signed link) for each batch and worker place of a campaign."""
    base = base_url.rstrip("/")
    links = []
    for batch in campaign.batches.order_by("index"):
        for slot in range(1, batch.max_assignments + 1):
            label = f"{prefix}-{batch.index}-{slot}"
            token = link_token(batch=batch, label=label)
            links.append((batch.index, label, base + reverse("crowd:link-take", args=[token])))
    return links


def campaigns_recent(*, limit: int) -> QuerySet[CrowdCampaign]:
    """The newest campaigns with their collections, as the organiser's home lists them."""
    return CrowdCampaign.objects.select_related("collection").order_by("-id")[:limit]
