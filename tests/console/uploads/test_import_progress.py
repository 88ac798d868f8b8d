"""A background upload tells its page how far it is, and a job whose worker died says so and resumes."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

import annotation.collection.io
from console.models import ImportJob
from console.uploads import services as uploads
from console.uploads.selectors import INTERRUPTED_REASON, import_job_state
from console.uploads.tasks import import_job_queue
from tests.background import tasks_run_ready
from tests.factories import CollectionFactory, OrganiserFactory


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def _passages_job(tmp_path, collection, count: int) -> ImportJob:
    folder = tmp_path / "upload"
    folder.mkdir()
    path = folder / "passages.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"p{i}", "text": f"passage {i}"}) + "\n" for i in range(count)),
        encoding="utf-8",
    )
    return ImportJob.objects.create(
        collection=collection,
        kind=ImportJob.Kind.PASSAGES,
        file_name=path.name,
        stored_path=str(path),
        size=path.stat().st_size,
    )


@pytest.mark.django_db(transaction=True)
def test_a_background_import_publishes_intermediate_progress_seen_outside_its_transaction(
    tmp_path, monkeypatch
):
    collection = CollectionFactory()
    job = _passages_job(tmp_path, collection, 1000)
    monkeypatch.setattr(annotation.collection.io, "BATCH", 100)  # ten batches, each told
    monkeypatch.setattr(uploads, "PROGRESS_EVERY_S", 0.0)
    tell = uploads.ImportProgress.__call__

    def slow_tell(self, done, total):
        tell(self, done, total)
        time.sleep(0.05)  # lets the helper thread publish each batch instead of only the last

    monkeypatch.setattr(uploads.ImportProgress, "__call__", slow_tell)
    store = uploads._progress_store
    seen: list[tuple[int, int, int, str]] = []

    def spy(job_id, done, total, *, to_database):
        store(job_id, done, total, to_database=to_database)
        # Read back on the helper thread's own connection, as the status page would from another request.
        state = import_job_state(job=ImportJob.objects.get(pk=job_id))
        seen.append((state.done, state.total, state.percent, state.status))

    monkeypatch.setattr(uploads, "_progress_store", spy)

    import_job_queue(job=job)
    assert tasks_run_ready() == 1  # the queue's worker, outside any transaction of the test

    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE
    assert (job.done, job.total, job.percent) == (1000, 1000, 100)
    assert collection.passages.count() == 1000
    middle = [row for row in seen if 0 < row[0] < 1000]
    assert len(middle) >= 3, seen
    assert all(row[1] == 1000 and row[3] == "running" and 0 < row[2] < 100 for row in middle)
    assert [row[0] for row in seen] == sorted(row[0] for row in seen)
    assert cache.get(uploads.progress_cache_key(job.pk)) is None


def test_progress_is_published_at_most_every_few_tenths_of_a_second(monkeypatch):
    published: list[tuple[int, int]] = []
    monkeypatch.setattr(
        uploads,
        "_progress_store",
        lambda job_id, done, total, *, to_database: published.append((done, total)),
    )
    started = time.monotonic()
    with uploads.ImportProgress(0, to_database=False) as progress:
        for done in range(1, 20_001):
            progress(done, 20_000)
            if done % 1000 == 0:
                time.sleep(0.03)
    elapsed = time.monotonic() - started

    assert 2 <= len(published) <= 2 + elapsed / uploads.PROGRESS_EVERY_S
    assert published == sorted(published)


def test_a_silent_importer_still_beats(monkeypatch):
    published: list[tuple[int, int]] = []
    monkeypatch.setattr(
        uploads,
        "_progress_store",
        lambda job_id, done, total, *, to_database: published.append((done, total)),
    )
    monkeypatch.setattr(uploads, "HEARTBEAT_S", 0.05)
    monkeypatch.setattr(uploads, "PROGRESS_EVERY_S", 0.01)
    with uploads.ImportProgress(0, to_database=False):
        time.sleep(0.5)

    assert len(published) >= 4
    assert set(published) == {(0, 0)}


@pytest.fixture
def organiser_client(client):
    client.force_login(OrganiserFactory())
    return client


def _running_job(silent_for: timedelta) -> ImportJob:
    beat = timezone.now() - silent_for
    return ImportJob.objects.create(
        collection=CollectionFactory(),
        kind=ImportJob.Kind.PASSAGES,
        file_name="passages.jsonl",
        stored_path="/gone/passages.jsonl",
        status=ImportJob.Status.RUNNING,
        percent=40,
        done=400,
        total=1000,
        started_at=beat,
        heartbeat_at=beat,
    )


@pytest.mark.django_db
def test_a_running_job_silent_longer_than_the_setting_shows_as_interrupted(organiser_client, settings):
    settings.IMPORT_STALE_AFTER_S = 120
    job = _running_job(timedelta(seconds=121))

    response = organiser_client.get(reverse("console-import-status", args=[job.collection.name, job.pk]))
    page = organiser_client.get(reverse("console-import", args=[job.collection.name, job.pk]))

    assert response.status_code == 200
    assert response.json() == {
        "status": "interrupted",
        "status_label": "Interrupted",
        "percent": 40,
        "done": 400,
        "total": 1000,
        "finished": True,
        "reason": INTERRUPTED_REASON,
    }
    assert page.status_code == 200
    assert "nothing was imported" in page.content.decode()
    assert "Upload the file again." in page.content.decode()  # its stored copy is gone: no resume
    assert b'id="import-resume"' not in page.content
    assert b"console_import.js" not in page.content  # nothing left to follow
    job.refresh_from_db()
    assert job.status == ImportJob.Status.RUNNING  # a read only tells; a late runner may still finish it


@pytest.mark.django_db
def test_a_running_job_heard_from_recently_is_still_importing(organiser_client, settings):
    settings.IMPORT_STALE_AFTER_S = 120
    job = _running_job(timedelta(seconds=60))

    response = organiser_client.get(reverse("console-import-status", args=[job.collection.name, job.pk]))

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["finished"]) == ("running", False)


@pytest.mark.django_db
def test_a_job_whose_row_is_old_but_whose_runner_beats_in_the_cache_is_importing(organiser_client, settings):
    # On SQLite the import's transaction keeps every other writer out: only the cache hears the beats.
    settings.IMPORT_STALE_AFTER_S = 120
    job = _running_job(timedelta(seconds=600))
    uploads._progress_store(job.pk, 700, 1000, to_database=False)

    response = organiser_client.get(reverse("console-import-status", args=[job.collection.name, job.pk]))

    assert response.status_code == 200
    payload = response.json()
    assert (payload["status"], payload["done"], payload["total"], payload["percent"]) == (
        "running",
        700,
        1000,
        70,
    )


@pytest.mark.django_db
def test_an_upload_whose_worker_died_resumes_from_its_stored_file(organiser_client, tmp_path, settings):
    settings.IMPORT_STALE_AFTER_S = 120
    collection = CollectionFactory()
    job = _passages_job(tmp_path, collection, 3)
    import_job_queue(job=job)
    job.refresh_from_db()
    name = collection.name
    page = organiser_client.get(reverse("console-import", args=[name, job.pk]))
    assert (page.status_code, b'id="import-resume"' in page.content) == (
        200,
        False,
    )  # waiting: nothing to resume
    # Its worker took the task and died before the first beat: the queue says the task is over.
    DBTaskResult.objects.filter(id=job.task_id).update(status="FAILED")
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.RUNNING, heartbeat_at=timezone.now())

    status = organiser_client.get(reverse("console-import-status", args=[name, job.pk]))
    page = organiser_client.get(reverse("console-import", args=[name, job.pk]))
    assert (status.status_code, status.json()["status"]) == (200, "interrupted")
    assert page.status_code == 200
    assert b'id="import-resume"' in page.content
    assert "Resume it, or upload the file again." in page.content.decode()

    response = organiser_client.post(reverse("console-import-resume", args=[name, job.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("console-import", args=[name, job.pk])
    job.refresh_from_db()
    assert job.status == ImportJob.Status.PENDING
    assert tasks_run_ready() == 1
    job.refresh_from_db()
    assert (job.status, job.done) == (ImportJob.Status.DONE, 3)
    assert collection.passages.count() == 3
    # Done: resuming again is refused, and changes nothing.
    again = organiser_client.post(reverse("console-import-resume", args=[name, job.pk]), follow=True)
    assert again.status_code == 200
    assert "not interrupted" in again.content.decode()
    assert tasks_run_ready() == 0
