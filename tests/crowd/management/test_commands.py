"""The crowd commands an organiser met first: crowd_links' default address and formula-safe cells,
crowd_csv's rows and cells, crowd_report's table titles."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Response
from crowd.answers.io import input_csv, results_csv
from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.models import CrowdCampaign
from tests.crowd.crowd_helpers import build_campaign

pytestmark = pytest.mark.django_db


def test_crowd_links_defaults_to_assay_base_url_and_its_links_open(settings):
    settings.ASSAY_BASE_URL = "http://127.0.0.1:8000"
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)
    out = io.StringIO()
    call_command("crowd_links", campaign=campaign.name, stdout=out, stderr=io.StringIO())
    rows = [line.split("\t") for line in out.getvalue().splitlines()]
    assert len(rows) == 2
    assert all(url.startswith("http://127.0.0.1:8000/crowd/take/") for _, _, url in rows)
    path = rows[0][2].removeprefix("http://127.0.0.1:8000")
    assert Client().get(path).status_code == 200

    settings.ASSAY_BASE_URL = "https://assay.example.org/"
    out = io.StringIO()
    call_command("crowd_links", campaign=campaign.name, stdout=out, stderr=io.StringIO())
    assert out.getvalue().split("\t")[2].startswith("https://assay.example.org/crowd/take/")


@pytest.mark.parametrize("prefix", ["=cmd", "+cmd", "-cmd", "@cmd"])
def test_crowd_links_writes_a_formula_like_label_as_text(settings, prefix):
    settings.ASSAY_BASE_URL = "http://127.0.0.1:8000"
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)
    out = io.StringIO()

    call_command("crowd_links", campaign=campaign.name, prefix=prefix, stdout=out, stderr=io.StringIO())

    rows = list(csv.reader(io.StringIO(out.getvalue()), delimiter="\t"))
    assert [label for _, label, _ in rows] == [f"'{prefix}-0-1", f"'{prefix}-1-1"]
    # The link itself still carries the label as given: it is only the spreadsheet cell that is escaped.
    path = rows[0][2].removeprefix("http://127.0.0.1:8000")
    assert Client().get(path).status_code == 200


def test_crowd_links_refuses_a_prefix_too_long_for_a_worker_id():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)

    with pytest.raises(CommandError, match="--prefix is too long: a worker label is at most 123 characters"):
        call_command("crowd_links", campaign=campaign.name, prefix="p" * 120, stdout=io.StringIO())


def test_crowd_links_explains_base_url_in_its_help(capsys):
    with pytest.raises(SystemExit):
        call_command("crowd_links", "--help")
    assert "ASSAY_BASE_URL" in capsys.readouterr().out


def test_export_input_fills_every_row_to_the_header_for_a_smaller_last_batch():
    campaign = build_campaign(batch_size=4)  # 10 pairs: batches of 4, 4 and 2 pairs, plus a test each
    assert [b.items.count() for b in campaign.batches.order_by("index")] == [5, 5, 3]
    rows = list(csv.reader(io.StringIO(input_csv(campaign=campaign))))
    assert len(rows[0]) == 1 + 2 * 5
    assert [len(row) for row in rows[1:]] == [len(rows[0])] * 3
    assert rows[3][-4:] == ["", "", "", ""]


def test_crowd_csv_exports_write_formula_like_cells_as_text():
    campaign = build_campaign(batch_size=10)
    batch = campaign.batches.get()
    pair = batch.items.filter(test_question__isnull=True).first()
    Response.objects.filter(pk=pair.response_id).update(text='=HYPERLINK("http://x","click")')
    items = {item.position: item for item in batch.items.select_related("test_question")}
    answers = {p: (item.test_question.answer if item.is_test else True) for p, item in items.items()}
    assignment_submit(
        batch=batch, worker=worker_get_or_create(worker_id="@evil"), answers=answers, assignment_id="-1+2"
    )
    inputs = list(csv.reader(io.StringIO(input_csv(campaign=campaign))))
    assert '\'=HYPERLINK("http://x","click")' in inputs[1]
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in inputs for cell in row)
    results = list(csv.DictReader(io.StringIO(results_csv(campaign=campaign))))
    assert (results[0]["WorkerId"], results[0]["AssignmentId"]) == ("'@evil", "'-1+2")


def test_crowd_report_titles_its_two_tables():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM)
    out = io.StringIO()
    call_command("crowd_report", campaign=campaign.name, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"Workers of {campaign.name} (In-platform)"
    assert f"Batches of {campaign.name}" in lines
    assert "fee" not in lines[-1]  # no MTurk fee in the platform
