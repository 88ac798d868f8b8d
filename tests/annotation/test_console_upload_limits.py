"""Console uploads: the size limit holds while the body streams in."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.console.uploads import upload_root
from annotation.models import ImportJob
from tests.factories import CollectionFactory, OrganiserFactory

pytestmark = pytest.mark.django_db

QRELS = b"1_1 0 d:1 2\n1_1 0 d:2 0\n"


@pytest.fixture
def stored(settings, tmp_path) -> Path:
    """Uploads wait under this test's own folder, so what was stored can be seen."""
    settings.MEDIA_ROOT = str(tmp_path)
    return upload_root()


@pytest.fixture
def organiser(client):
    user = OrganiserFactory(username="olga")
    client.force_login(user)
    return user


@pytest.fixture
def collection():
    return CollectionFactory(name="camp")


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
