"""MTurk CSV round trip, the crowd report, and the expire command against the local server."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from crowd.answers.io import parse_time, results_csv
from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.campaigns.report import campaign_report
from crowd.models import CrowdAnswer, CrowdAssignment, CrowdCampaign
from devtools.mturk_server import FakeMTurkServer
from tests.crowd.crowd_helpers import build_campaign

pytestmark = pytest.mark.django_db


def _results_file(tmp_path, campaign, rows):
    size = campaign.batches.get().items.count()
    path = tmp_path / "Batch_123_batch_results.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "HITId",
                "HITTypeId",
                "Title",
                "AssignmentId",
                "WorkerId",
                "AssignmentStatus",
                "AcceptTime",
                "SubmitTime",
                "WorkTimeInSeconds",
                "Input.batch",
                *[f"Answer.q{n}" for n in range(1, size + 1)],
            ]
        )
        for assignment_id, worker, answers in rows:
            writer.writerow(
                [
                    "",
                    "HT",
                    "t",
                    assignment_id,
                    worker,
                    "Submitted",
                    "Wed Mar 06 07:14:22 PST 2024",
                    "Wed Mar 06 07:20:22 PST 2024",
                    "360",
                    "0",
                    *answers,
                ]
            )
    return path


def test_it_imports_a_results_csv_idempotently(tmp_path):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    path = _results_file(tmp_path, campaign, [("A1", "W1", ["yes"] * 11), ("A2", "W2", ["no"] * 11)])
    for _ in range(2):
        call_command("crowd_csv", "import-results", str(path), campaign=campaign.name)
        assert CrowdAssignment.objects.count() == 2
        assert CrowdAnswer.objects.count() == 22
    a1 = CrowdAssignment.objects.get(assignment_id="A1")
    assert a1.work_seconds == 360
    assert a1.accept_time == parse_time("Wed Mar 06 15:14:22 UTC 2024")
    assert set(a1.answers.values_list("matched", flat=True)) == {True}


def test_it_rejects_a_results_csv_with_a_bad_answer_naming_the_line(tmp_path):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    path = _results_file(tmp_path, campaign, [("A1", "W1", ["yes"] * 11), ("A2", "W2", ["maybe"] * 11)])
    with pytest.raises(CommandError, match=r"Batch_123_batch_results.csv:3: answer must be yes or no"):
        call_command("crowd_csv", "import-results", str(path), campaign=campaign.name)
    assert not CrowdAssignment.objects.exists()


@pytest.mark.parametrize("ms", ["inf", "1e400", "nan", "-1", "1e30"])
def test_it_rejects_a_results_csv_with_an_absurd_answer_time_naming_the_line(tmp_path, ms):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    path = _results_file(tmp_path, campaign, [("A1", "W1", ["yes"] * 11)])
    rows = list(csv.reader(path.open(newline="")))
    rows[0].append("Answer.ms1")
    rows[1].append(ms)
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    with pytest.raises(
        CommandError, match=r"Batch_123_batch_results.csv:2: ms1 must be a number of milliseconds"
    ):
        call_command("crowd_csv", "import-results", str(path), campaign=campaign.name)
    assert not CrowdAssignment.objects.exists()


def test_exported_results_import_back_into_the_same_rows(tmp_path):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    assignment_submit(
        batch=batch,
        worker=worker_get_or_create(worker_id="W1"),
        answers={i.position: i.position % 2 == 0 for i in batch.items.all()},
        assignment_id="A1",
    )
    text = results_csv(campaign=campaign)
    header = next(csv.reader(io.StringIO(text)))
    assert (
        header[:3] == ["HITId", "HITTypeId", "AssignmentId"]
        and "Input.batch" in header
        and "Answer.q11" in header
    )
    before = sorted(CrowdAnswer.objects.values_list("item_id", "matched"))
    path = tmp_path / "results.csv"
    path.write_text(text)
    call_command("crowd_csv", "import-results", str(path), campaign=campaign.name)
    assert sorted(CrowdAnswer.objects.values_list("item_id", "matched")) == before
    out = io.StringIO()
    call_command("crowd_csv", "export-input", "-", campaign=campaign.name, stdout=out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[0][:3] == ["batch", "response_1", "nugget_1"] and len(rows) == 2


def test_report_counts_test_accuracy_and_cost_with_the_mturk_fee():
    campaign = build_campaign(batch_size=10)
    batch = campaign.batches.get()
    items = list(batch.items.select_related("test_question"))
    for worker, honest in (("W1", True), ("W2", True), ("W3", False)):
        assignment_submit(
            batch=batch,
            worker=worker_get_or_create(worker_id=worker),
            answers={i.position: (i.test_question.answer == honest) if i.is_test else True for i in items},
        )
    campaign.refresh_from_db()
    report = campaign_report(campaign=campaign)
    assert [(w.worker_id, w.tests, w.tests_right, w.answers) for w in report.workers] == [
        ("W1", 1, 1, 11),
        ("W2", 1, 1, 11),
        ("W3", 1, 0, 11),
    ]
    assert report.reward_total == campaign.reward * 3
    assert report.cost_total == (campaign.reward * 3 * Decimal("1.2")).quantize(Decimal("0.01"))
    out = io.StringIO()
    call_command("crowd_report", campaign=campaign.name, stdout=out)
    assert "W3\t1\t11\t0/1" in out.getvalue()


def test_expire_command_expires_published_hits_on_the_local_server():
    campaign = build_campaign(batch_size=5)
    with (
        FakeMTurkServer() as server,
        override_settings(MTURK_ENDPOINT_URL=server.url, MTURK_EXTERNAL_URL="https://testserver"),
    ):
        call_command("mturk_publish", campaign=campaign.name)
        call_command("mturk_publish", campaign=campaign.name)  # nothing left to publish: no new HITs
        assert len(server.state.hits) == 2
        call_command("mturk_expire", campaign=campaign.name)
        for hit_id in server.state.hits:
            assert server.fake.op_GetHIT({"HITId": hit_id})["HIT"]["NumberOfAssignmentsAvailable"] == 0
    assert set(campaign.batches.values_list("status", flat=True)) == {"expired"}


def test_publish_refuses_a_live_run_without_the_flag(settings):
    campaign = build_campaign(batch_size=5)
    settings.MTURK_LIVE = True
    with pytest.raises(CommandError, match="--live"):
        call_command("mturk_publish", campaign=campaign.name)
    settings.MTURK_LIVE = False
    settings.MTURK_ENDPOINT_URL = ""
    settings.MTURK_EXTERNAL_URL = "http://insecure.example"
    with pytest.raises(CommandError, match="HTTPS"):
        call_command("mturk_publish", campaign=campaign.name)


def test_fake_server_command_serves_on_loopback_and_refuses_other_hosts():
    out = io.StringIO()
    call_command("mturk_fake_server", port=0, seconds=0.2, stdout=out)
    assert out.getvalue().startswith("fake MTurk listening on http://127.0.0.1:")
    with pytest.raises(CommandError, match="loopback"):
        call_command("mturk_fake_server", host="0.0.0.0", port=0, seconds=0.1)
