"""Anonymous worker links: signed addresses of a batch and a worker label, and the worker who takes one."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core import signing
from django.urls import reverse

from crowd.models import CrowdBatch, CrowdCampaign, CrowdWorker

LINK_SALT = "mturk.link"


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


def campaign_links(*, campaign: CrowdCampaign, base_url: str, prefix: str) -> list[tuple[int, str, str]]:
    """(batch index, worker label, signed link) for each batch and worker place of a campaign."""
    return batch_links(batches=campaign.batches.order_by("index"), base_url=base_url, prefix=prefix)


def batch_links(*, batches: Iterable[CrowdBatch], base_url: str, prefix: str) -> list[tuple[int, str, str]]:
    """(batch index, worker label, signed link) for each worker place of these batches, in their order."""
    # The address reversed once, around a stand-in: a token is URL-safe base64 and ':' (django.core.signing),
    # which reverse() leaves as they are, and a page lists hundreds of links.
    head, tail = reverse("crowd:link-take", args=["-"]).rsplit("-", 1)
    base = base_url.rstrip("/") + head
    links = []
    for batch in batches:
        for slot in range(1, batch.max_assignments + 1):
            label = f"{prefix}-{batch.index}-{slot}"
            links.append((batch.index, label, base + link_token(batch=batch, label=label) + tail))
    return links
