"""The TREC RAG nugget score pages in real Chromium: an organiser chooses the judges, ranks the runs by a
score, sorts a column, opens a run topic by topic, downloads the assignments, and compares two
evaluations on the calibration page."""

import json

import pytest

from annotation.models import Judge
from annotation.rag_nuggets.io import assignments_import
from tests.background import IMMEDIATE
from tests.factories import CollectionFactory, OrganiserFactory
from tests.rag_nugget_files import assignment_records, assignments_file, nugget_lists, rag_collection

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RUNS = ("run-a", "run-b", "run-c", "run-d")


def column(page, table, index):
    return page.locator(f"#{table} tbody tr").evaluate_all(
        f"rows => rows.map(r => r.cells[{index}].textContent.trim())"
    )


def test_an_organiser_scores_ranks_downloads_and_calibrates(page, login, tmp_path, settings):
    # The scores are computed as the page asks for them (tests/judging/test_report_pages.py pins the
    # worker that computes them otherwise).
    settings.TASKS = IMMEDIATE
    collection = CollectionFactory(name="rag")
    rag_collection(tmp_path, collection, runs=RUNS)
    lists = nugget_lists(seed=3, size=5)
    for name, seed in (("auto", 1), ("manual", 2)):
        judge = Judge.objects.create(name=name, kind=Judge.Kind.LLM)
        records = assignment_records(lists, seed=seed, runs=RUNS)
        assignments_import(
            path=assignments_file(tmp_path / f"{name}.jsonl", records), collection=collection, judge=judge
        )
    OrganiserFactory(username="org")
    login("org")

    page.goto("/judging/evaluation/")
    page.click("a[href='/judging/evaluation/rag/nuggets/']")
    page.select_option("#id_judge", "auto")
    page.select_option("#id_order", "all_score")
    page.click("#nugget-scores-form button[type=submit]")
    page.wait_for_selector("#nugget-scores-table")
    all_scores = [float(v) for v in column(page, "nugget-scores-table", 5)]
    assert all_scores == sorted(all_scores, reverse=True)
    assert column(page, "nugget-scores-table", 0)[0] == "1"
    page.locator("#nugget-scores-table thead th", has_text="Run").click()
    assert column(page, "nugget-scores-table", 1) == list(RUNS)

    with page.expect_download() as download:
        page.click("#download-assignments")
    saved = tmp_path / "downloaded.jsonl"
    download.value.save_as(saved)
    assert download.value.suggested_filename == "rag-assignments-auto-imp-default.jsonl"
    assert {json.loads(line)["run_id"] for line in saved.read_text().splitlines()} == set(RUNS)

    page.click("#nugget-scores-table >> text=run-b")
    page.wait_for_url("**/nuggets/runs/run-b/**")
    assert column(page, "nugget-topics-table", 0) == ["2024-1", "2024-2", "2024-10"]

    page.click("#all-runs")
    page.click("#nugget-calibration-link")
    page.select_option("#id_judge_a", "auto")
    page.select_option("#id_judge_b", "manual")
    page.click("#calibrate")
    page.wait_for_selector("#calibration-run-level")
    assert page.locator("#fig-tau").text_content() != "n/a"
    assert column(page, "calibration-topics", 0) == ["2024-1", "2024-2", "2024-10"]
