"""What the fuzz tests share: how many examples, the built collection they run against, and a tally of
every request they send, printed at the end of the run.

The in-suite run is short and deterministic (a few examples per operation or form, the same ones every
time); `make fuzz` sets FUZZ_EXAMPLES to run many, drawn afresh each time (hypothesis prints the seed of
any failure, to replay it with `--hypothesis-seed`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from devtools.realsize import Size, realsize_build
from tests.factories import OrganiserFactory

LONG_EXAMPLES = os.environ.get("FUZZ_EXAMPLES", "")
LONG = bool(LONG_EXAMPLES)


def fuzz_settings(short: int) -> settings:
    """`short` examples per operation or form in the suite, always the same ones; FUZZ_EXAMPLES fresh ones
    each in the long run. Each test builds its collection in its own transaction and every example runs
    in a savepoint rolled back after it, so function-scoped fixtures are what is wanted here. No example
    database: nothing is written into the checkout."""
    return settings(
        max_examples=int(LONG_EXAMPLES) if LONG else short,
        derandomize=not LONG,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )


# The API and the forms: a few examples each, as there are many of them; the crowd pages, which anyone
# can reach, more.
FUZZ_SETTINGS = fuzz_settings(4)
CROWD_SETTINGS = fuzz_settings(25)

# One conversation, a few runs and pools, two assessors with work, one crowd campaign: every page and
# operation has something real to show, and the build takes well under a second.
FUZZ_SIZE = Size(
    topics=1,
    turns_per_topic=3,
    ranked_runs=2,
    answer_runs=1,
    depth=5,
    candidates=8,
    pools=1,
    assessors=2,
    campaigns=1,
    campaign_topics=1,
)

TALLY: Counter[tuple[str, int]] = Counter()


def tally(kind: str, status: int) -> None:
    TALLY[(kind, status // 100 * 100)] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not TALLY:
        return
    kinds = sorted({kind for kind, _ in TALLY})
    terminalreporter.section("fuzz requests")
    for kind in kinds:
        by_class = {status: n for (k, status), n in sorted(TALLY.items()) if k == kind}
        total = sum(by_class.values())
        classes = ", ".join(f"{status // 100}xx: {n}" for status, n in by_class.items())
        terminalreporter.write_line(f"{kind}: {total} requests ({classes})")


@dataclass
class FuzzWorld:
    name: str
    organiser: object
    assessor: object


@pytest.fixture
def fuzz_world(db, settings) -> FuzzWorld:
    # A form that starts an MTurk or LLM call must fail here at once, never reach the internet.
    settings.MTURK_ENDPOINT_URL = settings.OPENAI_BASE_URL = "http://127.0.0.1:9"
    realsize_build(name="fuzz", size=FUZZ_SIZE)
    return FuzzWorld(
        name="fuzz",
        organiser=OrganiserFactory(),
        assessor=get_user_model().objects.get(username="fuzz-assessor-01"),
    )


@pytest.fixture
def connection_kept():
    """Django closes the database connection at the end of each request, which would end the test's
    transaction; its test client stops that around each request, and so does this for a WSGI caller."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)
