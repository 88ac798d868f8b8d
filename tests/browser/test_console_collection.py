"""An organiser creates a collection in the browser by uploading the shared iKAT 2024 files, then pools it."""

import pytest

from annotation.models import Collection, Pool
from console.models import ImportJob
from tests.background import IMMEDIATE
from tests.factories import OrganiserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_organiser_creates_a_collection_by_upload_and_builds_a_pool(page, login, shared_data, settings):
    # The topics file (277 KB) goes to the task queue, the run is imported at once. The queue's backend
    # runs the task as it is queued: the suite's SQLite database lives in this process's memory, where no
    # worker process reaches it (tests/console/test_pages.py pins the queue and its worker).
    settings.CONSOLE_INLINE_IMPORT_BYTES = 250 * 1024
    settings.TASKS = IMMEDIATE
    errors: list[str] = []
    # Script errors and refused scripts (the CSP); a missing favicon is not this page's concern.
    page.on("console", lambda message: errors.append(message.text) if "Refused" in message.text else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    OrganiserFactory(username="olga")
    login("olga")

    page.click("#new-collection")
    page.fill("#id_name", "ikat24")
    page.click("#collection-create")
    page.wait_for_url("**/console/collections/ikat24/")
    assert page.locator("[data-field=judge]").is_hidden()  # topics read no judge

    page.select_option("#id_kind", "topics")
    page.set_input_files("#id_file", str(shared_data / "ikat2024" / "2024_test_topics.json"))
    page.click("#upload-submit")
    page.wait_for_selector("#import-done", timeout=30_000)
    rows = page.locator("#import-result tbody tr").all_inner_texts()
    assert [row.split("\t")[:2] for row in rows] == [
        ["topics", "17"],
        ["turns", "218"],
        ["PTKB statements", "288"],
    ]

    page.goto("/console/collections/ikat24/")
    page.select_option("#id_kind", "run")
    assert page.locator("[data-field=run_name]").is_visible()
    page.set_input_files("#id_file", str(shared_data / "ikat2024" / "sample_run.json"))
    page.click("#upload-submit")
    page.wait_for_selector("#import-done")

    page.click("#console-nav >> text=Pools")
    page.fill("#id_name", "top5")
    page.fill("#id_depth", "5")
    page.click("#pool-build")
    page.wait_for_url("**/pools/top5/")
    assert "pairs over 218 turns" in page.locator("#pool-summary").inner_text()

    collection = Collection.objects.get(name="ikat24")
    assert list(ImportJob.objects.values_list("status", flat=True)) == ["done", "done"]
    assert Pool.objects.get(collection=collection, name="top5").entries.count() == 218 * 5
    assert errors == []
