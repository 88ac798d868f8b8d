"""The whole MTurk flow with the real boto3 client against the local MTurk-compatible server.

publish -> three workers accept the HIT on the fake's worker side and answer on our worker page, which
stores the answers and hands them on to externalSubmit -> sync (three times) -> review -> aggregate.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from html import escape

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import NtrJudgment
from crowd.models import CrowdAnswer, CrowdAssignment
from devtools.mturk_server import FakeMTurkServer
from tests.crowd.crowd_helpers import build_campaign, hidden_form

pytestmark = pytest.mark.django_db


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _accept(server: FakeMTurkServer, hit_id: str, worker_id: str) -> str:
    """What MTurk's site does when a worker accepts: answers the framed URL (a 302 we do not follow)."""
    opener = urllib.request.build_opener(_NoRedirect)
    query = urllib.parse.urlencode({"hitId": hit_id, "workerId": worker_id})
    with pytest.raises(urllib.error.HTTPError) as caught:
        opener.open(f"{server.url}/worker/accept?{query}")
    assert caught.value.code == 302
    return caught.value.headers["Location"]


def _policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in header.split(";") if part.strip())


def _post(url: str, fields: dict[str, str]) -> tuple[int, str]:
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method="POST")) as response:
        return response.status, response.read().decode()


def test_it_labels_pairs_by_majority_of_workers_who_passed_the_test(fake_mturk):
    campaign = build_campaign()
    batches = list(campaign.batches.order_by("index"))
    assert [b.items.count() for b in batches] == [6, 6]

    call_command("mturk_publish", campaign=campaign.name)
    for batch in batches:
        batch.refresh_from_db()
        assert batch.hit_id in fake_mturk.state.hits

    # The truth the honest workers follow: alternate yes/no over the pairs, independent of the code.
    pairs = [item for b in batches for item in b.items.order_by("position") if not item.is_test]
    truth = {item.id: i % 3 != 0 for i, item in enumerate(pairs)}
    disputed = pairs[1].id  # worker B disagrees with A here; with C discarded this is a tie

    def votes(worker: str, item) -> bool:
        if item.is_test:
            return item.test_question.answer if worker != "WC" else not item.test_question.answer
        if worker == "WA":
            return truth[item.id]
        if worker == "WB":
            return truth[item.id] if item.id != disputed else not truth[item.id]
        return not truth[item.id]  # WC fails the test and answers everything the other way

    browser = Client()
    for batch in batches:
        items = list(batch.items.select_related("test_question", "response", "nugget").order_by("position"))
        for worker in ("WA", "WB", "WC"):
            framed = urllib.parse.urlsplit(_accept(fake_mturk, batch.hit_id, worker))
            page = browser.get(framed.path, urllib.parse.parse_qs(framed.query))
            assert page.status_code == 200
            policy = _policy(page)
            assert policy["frame-ancestors"] == (
                f"https://workersandbox.mturk.com https://www.mturk.com {fake_mturk.url}"
            )
            # Framed by MTurk, the page keeps the site's policy: scripts and styles from our origin only.
            assert (policy["script-src"], policy["style-src"]) == ("'self'", "'self'")
            assert "X-Frame-Options" not in page
            html = page.content.decode()
            for item in items:
                assert escape(item.nugget_text) in html
            answers = {f"q{item.position + 1}": "yes" if votes(worker, item) else "no" for item in items}
            stored = browser.post(f"{framed.path}?{framed.query}", answers)
            assert stored.status_code == 200
            action, fields = hidden_form(stored.content.decode())
            assert action == f"{fake_mturk.url}/mturk/externalSubmit"
            status, _ = _post(action, fields)
            assert status == 200

    # Stored by our page first, before MTurk was asked.
    assert CrowdAssignment.objects.filter(status=CrowdAssignment.Status.ACCEPTED).count() == 6

    for _ in range(3):
        call_command("mturk_sync", campaign=campaign.name)
        assert CrowdAssignment.objects.filter(batch__campaign=campaign).count() == 6
        assert CrowdAnswer.objects.filter(assignment__batch__campaign=campaign).count() == 36
    assert set(CrowdAssignment.objects.values_list("status", flat=True)) == {"Submitted"}
    assert sorted(
        CrowdAssignment.objects.filter(passed_tests=False).values_list("worker__worker_id", flat=True)
    ) == [
        "WC",
        "WC",
    ]

    call_command("mturk_review", campaign=campaign.name, reject_failed=True, block_failed=True)
    remote = {a["WorkerId"] + a["HITId"]: a for a in fake_mturk.state.assignments.values()}
    for batch in batches:
        assert remote["WA" + batch.hit_id]["AssignmentStatus"] == "Approved"
        assert remote["WB" + batch.hit_id]["AssignmentStatus"] == "Approved"
        assert remote["WC" + batch.hit_id]["AssignmentStatus"] == "Rejected"
        assert remote["WC" + batch.hit_id]["RequesterFeedback"]
    campaign.refresh_from_db()
    assert (campaign.block_qualification_id, "WC") in fake_mturk.state.worker_qualifications

    call_command("crowd_aggregate", campaign=campaign.name)
    labels = {
        (j.response_id, j.nugget_id): j.matched
        for j in NtrJudgment.objects.filter(judge=campaign.label_judge)
    }
    expected = {(i.response_id, i.nugget_id): truth[i.id] for i in pairs if i.id != disputed}
    assert labels == expected
    assert campaign.label_judge.name == "mturk-majority"
    assert campaign.label_judge.kind == "crowd"


def test_it_keeps_the_worker_page_in_preview_until_the_hit_is_accepted(fake_mturk):
    campaign = build_campaign()
    call_command("mturk_publish", campaign=campaign.name)
    batch = campaign.batches.order_by("index").first()
    batch.refresh_from_db()
    location = fake_mturk.fake.worker_preview(batch.hit_id)
    framed = urllib.parse.urlsplit(location)
    page = Client().get(framed.path, urllib.parse.parse_qs(framed.query))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="crowd-preview"' in html
    assert 'id="crowd-yes" class="crowd-choice" aria-pressed="false" disabled' in html
    assert _policy(page)["frame-ancestors"].startswith("https://workersandbox.mturk.com ")
    assert _policy(page)["script-src"] == "'self'"
    assert not CrowdAssignment.objects.exists()
