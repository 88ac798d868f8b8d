"""Reads for MTurk: the signed address of a batch's HIT page, and the batch it names."""

from __future__ import annotations

from django.core import signing

from crowd.models import CrowdBatch

HIT_SALT = "mturk.hit"
# A HIT page link outlives the HIT by this long, so a worker who accepted at the last moment can finish.
HIT_LINK_GRACE_SECONDS = 24 * 3600


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
