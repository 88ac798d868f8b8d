"""Fixtures shared by the crowd tests; builders of campaigns and simulated workers are in crowd_helpers.py."""

import pytest

from devtools.mturk_server import FakeMTurkServer


@pytest.fixture
def fake_mturk(settings):
    """The loopback MTurk-compatible server, with the site's MTurk client and HIT pages pointed at it."""
    with FakeMTurkServer() as server:
        settings.MTURK_ENDPOINT_URL = server.url
        settings.MTURK_EXTERNAL_URL = "https://testserver"
        yield server
