"""Console uploads: the size limit holds while the body streams in, and identical uploads at once give a
clean refusal instead of a database error."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, connections
from django.test import Client
from django.urls import reverse

from annotation.models import RelevanceJudgment
from console.models import ImportJob
from console.uploads.importers import IMPORTERS
from console.uploads.services import import_job_run, upload_root
from tests.core.test_bulk import planner_rows
from tests.factories import CollectionFactory, OrganiserFactory, PassageFactory, TurnFactory

pytestmark = pytest.mark.django_db

QRELS = b"1_1 0 d:1 2\n1_1 0 d:2 0\n"


@pytest.fixture
def stored(settings, tmp_path) -> Path:
    """Uploads wait under this test's own folder, so what was stored can be seen."""
    settings.MEDIA_ROOT = str(tmp_path)
    return upload_root()


def post(client: Client, name: str, content: bytes, **fields: str):
    return client.post(
        reverse("console-collection", args=["camp"]),
        {"kind": "qrels", "judge": "nist", "file": SimpleUploadedFile(name, content), **fields},
    )


def stored_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


# A body a little over the limit is stopped as its bytes arrive; one whose declared length is far over it
# before its file starts.
@pytest.mark.parametrize("lines", [500, 200_000])
def test_it_refuses_an_upload_past_the_limit_while_it_streams_in(
    client, organiser, collection, stored, settings, lines
):
    settings.IMPORT_MAX_BYTES = 1000
    # Files go to disk at once, so a stored part would show.
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0

    response = post(client, "big.qrels", b"1_1 0 d:1 2\n" * lines)

    assert response.status_code == 413
    text = response.content.decode()
    assert "larger than the upload limit" in text
    assert "IMPORT_MAX_BYTES" in text
    assert "nothing was stored" in text
    assert 'value="nist"' in text  # the form comes back as it was filled in
    assert not ImportJob.objects.exists()
    assert stored_files(stored) == []


def test_it_takes_an_upload_just_at_the_limit(client, organiser, collection, stored, settings):
    settings.IMPORT_MAX_BYTES = len(QRELS)

    response = post(client, "q.qrels", QRELS)

    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.size == len(QRELS)
    assert not any("IMPORT_MAX_BYTES" in problem for problem in job.problems), job.problems


def test_the_upload_form_still_checks_its_csrf_token(organiser, collection, stored):
    client = Client(enforce_csrf_checks=True)
    client.force_login(organiser)

    response = post(client, "q.qrels", QRELS)

    assert response.status_code == 403
    assert not ImportJob.objects.exists()


def test_an_identical_upload_while_the_first_is_importing_is_refused_cleanly(
    client, organiser, collection, stored, settings
):
    # The first upload waits for a task worker; the second arrives meanwhile.
    settings.CONSOLE_INLINE_IMPORT_BYTES = 0
    first = post(client, "q.qrels", QRELS)
    assert first.status_code == 302

    second = post(client, "again.qrels", QRELS)

    assert second.status_code == 400
    text = second.content.decode()
    assert "again.qrels is already being imported" in text
    assert "IntegrityError" not in text
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.PENDING
    assert len(stored_files(stored)) == 1


def test_a_different_file_or_different_options_is_not_taken_for_the_same_upload(
    client, organiser, collection, stored, settings
):
    settings.CONSOLE_INLINE_IMPORT_BYTES = 0
    post(client, "q.qrels", QRELS)

    other_file = post(client, "q.qrels", QRELS.replace(b"d:2 0", b"d:2 1"))
    other_judge = post(client, "q.qrels", QRELS, judge="nist-2")

    assert other_file.status_code == 302
    assert other_judge.status_code == 302
    assert ImportJob.objects.count() == 3


def test_an_import_that_meets_rows_another_import_committed_says_so_in_words(
    client, organiser, collection, stored, monkeypatch
):
    # What the import of an overlapping file meets when the other one committed the same rows first.
    def clashing(path, collection, options, file_name, progress):
        raise IntegrityError('duplicate key value violates unique constraint "one_label_per_unit"')

    monkeypatch.setitem(IMPORTERS, "qrels", clashing)

    response = client.post(
        reverse("console-collection", args=["camp"]),
        {"kind": "qrels", "judge": "nist", "file": SimpleUploadedFile("q.qrels", QRELS)},
        follow=True,
    )

    assert response.status_code == 200
    text = response.content.decode()
    assert "being imported by another upload at once" in text
    assert "duplicate key" not in text
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.FAILED
    assert job.error == ""


TOPICS = json.dumps(
    [
        {
            "number": "1",
            "title": "Moving",
            "ptkb": {"1": "I live in Lyon."},
            "turns": [{"turn_id": 1, "utterance": "Where?"}],
        }
    ]
).encode()


# Two requests at the same instant need a database two connections can share (not the test's in-memory
# SQLite); on PostgreSQL the second import would fail on the first's rows without the lock.
@pytest.mark.django_db(transaction=True)
def test_two_identical_uploads_at_once_end_without_a_database_error_on_postgresql(stored):
    organiser = OrganiserFactory(username="olga")
    CollectionFactory(name="camp")
    start = threading.Barrier(2, timeout=10)
    responses = []

    def upload() -> None:
        client = Client()
        client.force_login(organiser)
        start.wait()
        try:
            responses.append(post(client, "t.json", TOPICS, kind="topics"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=upload) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # The second either was refused while the first ran, or came after it and found everything there.
    statuses = sorted(r.status_code for r in responses)
    assert statuses in ([302, 302], [302, 400])
    refused = [r.content.decode() for r in responses if r.status_code == 400]
    assert all("t.json is already being imported" in text for text in refused)
    jobs = list(ImportJob.objects.all())
    assert len(jobs) == statuses.count(302)
    assert all(job.status == ImportJob.Status.DONE for job in jobs), [(j.problems, j.error) for j in jobs]


def test_a_file_imported_by_a_task_worker_leaves_the_planner_told_of_its_rows(
    client, organiser, collection, stored, settings
):
    # Uncommitted, the test's labels are counted by nothing but the job's own ANALYZE.
    TurnFactory(collection=collection, turn_id="1_1")
    for passage_id in ("d:1", "d:2"):
        PassageFactory(collection=collection, passage_id=passage_id)
    settings.CONSOLE_INLINE_IMPORT_BYTES = 0
    post(client, "q.qrels", QRELS)

    job = import_job_run(job_id=ImportJob.objects.get().pk)

    assert job.status == ImportJob.Status.DONE
    assert planner_rows(RelevanceJudgment) == RelevanceJudgment.objects.count() == 2
