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
