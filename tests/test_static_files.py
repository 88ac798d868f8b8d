"""Static files are served in every mode: without DEBUG and before any collectstatic, pages keep their CSS
and JavaScript (keyboard shortcuts included)."""

import pytest
from django.test import Client, override_settings


@pytest.mark.parametrize("path", ["/static/assay.css", "/static/js/relevance.js", "/static/js/hotkeys.js"])
def test_static_files_are_served_without_debug_or_collectstatic(tmp_path, path):
    with override_settings(DEBUG=False, STATIC_ROOT=str(tmp_path / "never-collected")):
        response = Client().get(path)
    assert response.status_code == 200
    assert b"".join(response.streaming_content if response.streaming else [response.content])


def test_it_answers_favicon_ico_with_the_site_icon(tmp_path):
    # Browsers ask for /favicon.ico on pages that link no icon (the admin, the API docs, JSON answers).
    with override_settings(DEBUG=False, STATIC_ROOT=str(tmp_path / "never-collected")):
        client = Client()
        response = client.get("/favicon.ico")
        icon = client.get(response["Location"])

    assert response.status_code == 302
    assert response["Location"] == "/static/favicon.svg"
    assert icon.status_code == 200
    assert icon["Content-Type"].startswith("image/svg+xml")
    assert b"".join(icon.streaming_content if icon.streaming else [icon.content]).startswith(b"<svg xmlns=")
