"""Reads for MTurk: the signed address of a batch's HIT page and the batch it names, and a campaign's
qualification test and the test questions it is made from."""

from __future__ import annotations

from django.core import signing

from crowd.models import CrowdBatch, CrowdCampaign, CrowdQualification, TestQuestion

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


def campaign_qualification(*, campaign: CrowdCampaign) -> CrowdQualification | None:
    return CrowdQualification.objects.filter(campaign=campaign).first()


def campaign_test_questions(*, campaign: CrowdCampaign) -> list[TestQuestion]:
    """The test questions of the campaign's kind in its collection: those its batches use first, then the
    rest of the pool, each part in the order they were made."""
    pool = TestQuestion.objects.filter(collection=campaign.collection)
    if campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT:
        pool = pool.exclude(support="")
    else:
        pool = pool.filter(support="")
    used = set(pool.filter(items__batch__campaign=campaign).values_list("id", flat=True))
    return sorted(pool, key=lambda question: (question.id not in used, question.id))
