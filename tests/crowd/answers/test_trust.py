"""What a crowd label can be trusted for: forged HIT page posts, vanished HITs, expired links.

The HIT page takes posts from anyone under any assignment and worker ids (it must be CSRF-exempt inside
MTurk's frame). Its answers stay provisional until `mturk_sync` hears the same ids from MTurk; only then
do they vote and take a place of the batch.
"""

from __future__ import annotations

import time
import types
import urllib.parse
from io import StringIO

import pytest
from django.core import signing
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import NtrJudgment
from crowd.models import CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdWorker
from crowd.providers.links.selectors import link_token
from crowd.providers.mturk.selectors import hit_token
from tests.crowd.crowd_helpers import build_campaign, hidden_form

pytestmark = pytest.mark.django_db


def _published(fake_mturk, *, batch_size: int = 10, assignments: int = 2) -> CrowdCampaign:
    campaign = build_campaign(batch_size=batch_size, assignments=assignments)
    call_command("mturk_publish", campaign=campaign.name, stdout=StringIO())
    return campaign


def _answers(batch: CrowdBatch, pair_vote: str) -> dict[str, str]:
    """Every test question right (so the answers pass), every pair answered `pair_vote`."""
    fields = {}
    for item in batch.items.select_related("test_question"):
        vote = ("yes" if item.test_question.answer else "no") if item.is_test else pair_vote
        fields[f"q{item.position + 1}"] = vote
    return fields


def _forge(fake_mturk, batch: CrowdBatch, *, assignment_id: str, worker_id: str, vote: str):
    """A POST to the HIT page with made-up ids, as anyone who has seen the HIT's address can send."""
    query = urllib.parse.urlencode(
        {
            "assignmentId": assignment_id,
            "hitId": batch.hit_id,
            "workerId": worker_id,
            "turkSubmitTo": fake_mturk.url,
        }
    )
    url = reverse("crowd:hit", args=[hit_token(batch=batch)])
    return Client().post(f"{url}?{query}", _answers(batch, vote))


def _work(fake_mturk, batch: CrowdBatch, worker_id: str, vote: str) -> str:
    """A real worker: accepts on MTurk, answers on our page, which hands the answers on to MTurk."""
    framed = urllib.parse.urlsplit(fake_mturk.fake.worker_accept(batch.hit_id, worker_id))
    page = Client().post(f"{framed.path}?{framed.query}", _answers(batch, vote))
    assert page.status_code == 200, page.content
    _, fields = hidden_form(page.content.decode())
    return fake_mturk.fake.external_submit(dict(fields))


def test_forged_hit_page_posts_neither_vote_nor_fill_the_batch(fake_mturk):
    campaign = _published(fake_mturk)
    batch = campaign.batches.get()
    batch.refresh_from_db()

    for n in range(4):
        forged = _forge(fake_mturk, batch, assignment_id=f"FORGED{n}", worker_id=f"FW{n}", vote="no")
        assert forged.status_code == 200
    for worker in ("WA", "WB"):
        _work(fake_mturk, batch, worker, "yes")

    # Before MTurk is asked: six provisional rows, none of which votes.
    assert CrowdAssignment.objects.filter(batch=batch, status="Accepted").count() == 6
    call_command("crowd_aggregate", campaign=campaign.name, stdout=StringIO())
    assert not NtrJudgment.objects.filter(judge=campaign.label_judge).exists()

    out = StringIO()
    call_command("mturk_sync", campaign=campaign.name, stdout=out, stderr=StringIO())
    assert "2 assignments seen, 2 stored, 4 provisional answers not reported by MTurk" in out.getvalue()
    confirmed = CrowdAssignment.objects.filter(batch=batch, status="Submitted")
    assert sorted(confirmed.values_list("worker__worker_id", flat=True)) == ["WA", "WB"]
    assert confirmed.count() == batch.max_assignments

    call_command("crowd_aggregate", campaign=campaign.name, stdout=StringIO())
    labels = NtrJudgment.objects.filter(judge=campaign.label_judge)
    assert labels.count() == 10
    assert set(labels.values_list("matched", flat=True)) == {True}
    assert not NtrJudgment.objects.filter(judge__name__startswith="mturk-worker:FW").exists()

    # The HIT has all its answers now: the page takes no more.
    late = _forge(fake_mturk, batch, assignment_id="FORGED-LATE", worker_id="FW-LATE", vote="no")
    assert late.status_code == 409
    assert b"This batch has all the answers it needs (2)." in late.content
    assert not CrowdAssignment.objects.filter(assignment_id="FORGED-LATE").exists()


def test_it_refuses_provisional_rows_past_three_per_place_and_stores_nothing(fake_mturk):
    campaign = _published(fake_mturk, assignments=2)
    batch = campaign.batches.get()
    batch.refresh_from_db()
    _work(fake_mturk, batch, "WA", "yes")  # a real worker, within the cap
    for n in range(5):
        assert (
            _forge(fake_mturk, batch, assignment_id=f"FORGED{n}", worker_id=f"FW{n}", vote="no").status_code
            == 200
        )
    workers = CrowdWorker.objects.count()

    refused = _forge(fake_mturk, batch, assignment_id="FORGED-X", worker_id="FW-X", vote="no")

    assert refused.status_code == 429
    assert b"This HIT already holds 6 answers that MTurk has not confirmed" in refused.content
    assert CrowdAssignment.objects.filter(batch=batch, status="Accepted").count() == 6
    assert not CrowdAssignment.objects.filter(assignment_id="FORGED-X").exists()
    assert CrowdWorker.objects.count() == workers
    # Posting again under an id the HIT already holds replaces that row, so it is not growth.
    assert _forge(fake_mturk, batch, assignment_id="FORGED9", worker_id="FW0", vote="yes").status_code == 200
    assert CrowdAssignment.objects.filter(batch=batch, status="Accepted").count() == 6
    assert CrowdAssignment.objects.get(worker__worker_id="FW0").assignment_id == "FORGED9"


def test_it_hands_a_real_worker_past_the_cap_on_to_mturk_and_sync_stores_them(fake_mturk):
    campaign = _published(fake_mturk, assignments=1)
    batch = campaign.batches.get()
    batch.refresh_from_db()
    for n in range(3):
        assert (
            _forge(fake_mturk, batch, assignment_id=f"FORGED{n}", worker_id=f"FW{n}", vote="no").status_code
            == 200
        )

    framed = urllib.parse.urlsplit(fake_mturk.fake.worker_accept(batch.hit_id, "WA"))
    page = Client().post(f"{framed.path}?{framed.query}", _answers(batch, "yes"))

    assert page.status_code == 429
    assert b"This HIT already holds 3 answers that MTurk has not confirmed" in page.content
    assert not CrowdAssignment.objects.filter(worker__worker_id="WA").exists()
    _, fields = hidden_form(page.content.decode())
    real_id = fake_mturk.fake.external_submit(dict(fields))
    call_command("mturk_sync", campaign=campaign.name, stdout=StringIO(), stderr=StringIO())
    row = CrowdAssignment.objects.get(assignment_id=real_id)
    assert (row.worker.worker_id, row.status) == ("WA", CrowdAssignment.Status.SUBMITTED)


def test_a_forged_post_under_a_real_workers_id_never_blocks_that_worker(fake_mturk):
    campaign = _published(fake_mturk)
    batch = campaign.batches.get()
    batch.refresh_from_db()
    assert _forge(fake_mturk, batch, assignment_id="FORGED1", worker_id="WA", vote="no").status_code == 200

    real_id = _work(fake_mturk, batch, "WA", "yes")  # the page takes the real worker's answers

    row = CrowdAssignment.objects.get(batch=batch, worker__worker_id="WA")
    assert (row.assignment_id, row.status) == (real_id, CrowdAssignment.Status.ACCEPTED)
    # Someone copies the real assignment id under another worker id, and posts under WA's id again.
    assert _forge(fake_mturk, batch, assignment_id=real_id, worker_id="FAKE", vote="no").status_code == 200
    assert _forge(fake_mturk, batch, assignment_id="FORGED2", worker_id="WA", vote="no").status_code == 200

    err = StringIO()
    call_command("mturk_sync", campaign=campaign.name, stdout=StringIO(), stderr=err)

    assert err.getvalue() == ""
    row = CrowdAssignment.objects.get(assignment_id=real_id)
    assert (row.worker.worker_id, row.status) == ("WA", CrowdAssignment.Status.SUBMITTED)
    pairs = row.answers.filter(item__test_question__isnull=True)
    assert set(pairs.values_list("matched", flat=True)) == {True}  # MTurk's copy, not the forged one
    assert CrowdAssignment.objects.filter(batch=batch, worker__worker_id="WA").count() == 1
    # A confirmed assignment is not reopened by the page.
    again = _forge(fake_mturk, batch, assignment_id="FORGED3", worker_id="WA", vote="no")
    assert again.status_code == 409
    assert CrowdAssignment.objects.get(batch=batch, worker__worker_id="WA").assignment_id == real_id


def test_sync_reports_a_vanished_hit_marks_its_batch_and_syncs_the_others(fake_mturk):
    campaign = _published(fake_mturk, batch_size=5)
    first, second = campaign.batches.order_by("index")
    first.refresh_from_db()
    second.refresh_from_db()
    _work(fake_mturk, first, "WA", "yes")
    _work(fake_mturk, second, "WA", "yes")
    del fake_mturk.state.hits[first.hit_id]

    out, err = StringIO(), StringIO()
    call_command("mturk_sync", campaign=campaign.name, stdout=out, stderr=err)

    assert out.getvalue().startswith("1 assignment seen, 1 stored")
    assert f"batch 0 (HIT {first.hit_id})" in err.getvalue()
    assert "does not exist" in err.getvalue()
    first.refresh_from_db()
    assert first.status == CrowdBatch.Status.MISSING
    assert CrowdAssignment.objects.get(batch=second).status == CrowdAssignment.Status.SUBMITTED
    assert CrowdAssignment.objects.get(batch=first).is_provisional
    # The next sync leaves the missing batch alone.
    err = StringIO()
    call_command("mturk_sync", campaign=campaign.name, stdout=StringIO(), stderr=err)
    assert err.getvalue() == ""


def _minted_ago(seconds: float, mint):
    """A token signed `seconds` ago: the signer reads the clock through its module's `time`."""
    past = types.SimpleNamespace(time=lambda: time.time() - seconds)
    real = signing.time
    signing.time = past  # type: ignore[assignment]
    try:
        return mint()
    finally:
        signing.time = real


def test_an_anonymous_link_expires_after_crowd_link_max_age(client, settings):
    settings.CROWD_LINK_MAX_AGE = 3600
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    old = _minted_ago(3700, lambda: link_token(batch=batch, label="anon-1"))
    fresh = _minted_ago(3500, lambda: link_token(batch=batch, label="anon-2"))

    stale = client.post(reverse("crowd:link-take", args=[old]), _answers(batch, "yes"))
    assert stale.status_code == 410
    assert b"This link has expired" in stale.content
    assert client.post(reverse("crowd:link-take", args=[fresh]), _answers(batch, "yes")).status_code == 200
    assert list(CrowdAssignment.objects.values_list("worker__worker_id", flat=True)) == ["link:anon-2"]


def test_a_hit_page_address_expires_a_day_after_its_hit_could_last(client, settings):
    settings.MTURK_ENDPOINT_URL = ""
    campaign = build_campaign(batch_size=10)
    batch = campaign.batches.get()
    lasts = campaign.lifetime_seconds + campaign.duration_seconds + 24 * 3600
    query = {"assignmentId": "A1", "workerId": "W1", "turkSubmitTo": "https://workersandbox.mturk.com"}

    old = _minted_ago(lasts + 60, lambda: hit_token(batch=batch))
    recent = _minted_ago(lasts - 60, lambda: hit_token(batch=batch))

    assert client.get(reverse("crowd:hit", args=[old]), query).status_code == 404
    assert client.get(reverse("crowd:hit", args=[recent]), query).status_code == 200
