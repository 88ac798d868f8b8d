"""The site keeps answering while the Redis behind its cache is down, and users stay signed in.

Each test starts its own redis-server on a free port, points the cache at it as CACHE_URL would (the same
settings, sessions in the database read through the cache), and stops it in the middle of the test.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.models import Session
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path, reverse
from redis.exceptions import ConnectionError as RedisConnectionError
from rest_framework.authtoken.models import Token
from rest_framework.throttling import SimpleRateThrottle

from annotation.models import RelevanceJudgment
from assay.cache import redis_cache_settings
from core.throttling import _IN_PROCESS
from tests.factories import OrganiserFactory, UserFactory, relevance_campaign

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server"),
]

PASSWORD = "a-long-enough-password"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A redis-server of the test's own, stopped and started again on the same port."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        options = f"--port {self.port} --bind 127.0.0.1 --appendonly no --dbfilename dump.rdb".split()
        self.process = subprocess.Popen(
            ["redis-server", *options, "--save", "", "--dir", str(self.folder)], stdout=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def stop(self, *, keep_data: bool = False) -> None:
        """Stop it; with keep_data its entries come back with it (as after a network split, or a Redis
        that saves to disk), else it comes back empty."""
        assert self.process is not None
        command = "SHUTDOWN SAVE" if keep_data else "SHUTDOWN NOSAVE"
        subprocess.run(["redis-cli", "-p", str(self.port), *command.split()], capture_output=True)
        self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def redis_server(tmp_path, settings):
    server = RedisServer(tmp_path)
    server.start()
    settings.CACHES = {"default": redis_cache_settings(server.url, timeout_s=0.5)}
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    _IN_PROCESS.clear()  # the throttles' counts while Redis is down, kept by the process across tests
    yield server
    if server.process is not None:
        server.stop()


def _signed_in(user) -> Client:
    client = Client()
    response = client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302, response.content[:300]
    return client


def _user(factory=UserFactory, **fields):
    user = factory(**fields)
    user.set_password(PASSWORD)
    user.save()
    return user


def _past_the_cache_outage():
    """The cache tries Redis again a moment after it failed; tests that wait for its return wait this."""
    from assay.cache import RETRY_AFTER_S

    time.sleep(RETRY_AFTER_S + 0.05)


def test_it_serves_signed_in_pages_while_redis_is_down_and_after_it_returns(redis_server):
    organiser = _user(OrganiserFactory)
    alice = _user()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    pages = [
        "/",
        reverse("relevance-queue"),
        reverse("collection-detail", args=[assignment.pool.collection.name]),
    ]
    client, boss = _signed_in(alice), _signed_in(organiser)
    assert client.get("/").status_code == 200  # the session is now in the cache too

    redis_server.stop()
    during = [c.get(url) for c in (client, boss) for url in pages]
    redis_server.start()
    _past_the_cache_outage()
    after = [c.get(url) for c in (client, boss) for url in pages]

    assert [r.status_code for r in during] == [200] * 6
    assert [r.status_code for r in after] == [200] * 6
    assert [r.wsgi_request.user for r in during + after] == [alice] * 3 + [organiser] * 3 + [alice] * 3 + [
        organiser
    ] * 3


def test_it_signs_in_and_out_while_redis_is_down(redis_server):
    alice = _user()
    redis_server.stop()

    client = _signed_in(alice)  # asserts the 302 to the landing page
    page = client.get(reverse("relevance-queue"))
    out = client.post(reverse("logout"))
    after = client.get(reverse("relevance-queue"))

    assert page.status_code == 200
    assert page.wsgi_request.user == alice
    assert out.status_code == 302
    assert after.status_code == 302  # to the log-in page
    assert Session.objects.count() == 0


def test_it_keeps_a_sign_out_made_during_the_outage_when_redis_returns_with_its_old_entries(redis_server):
    alice = _user()
    client = _signed_in(alice)
    assert client.get("/").status_code == 200
    cookie = client.cookies["sessionid"].value
    redis_server.stop(keep_data=True)  # the cache still holds alice's session when it comes back

    out = client.post(reverse("logout"))
    redis_server.start()
    _past_the_cache_outage()
    replay = Client()
    replay.cookies["sessionid"] = cookie
    page = replay.get(reverse("relevance-queue"))

    assert out.status_code == 302
    assert page.status_code == 302  # to the log-in page: the old session is gone from the cache too
    assert not page.wsgi_request.user.is_authenticated


def test_it_takes_grades_from_the_assessor_page_while_redis_is_down(redis_server):
    alice = _user()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=3, n_ptkb=0)
    client = _signed_in(alice)
    client.get(reverse("relevance-queue"))
    step = client.post(reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json")
    csrf = client.cookies["csrftoken"].value
    redis_server.stop()

    grades = []
    current = step.json()
    for _ in range(3):
        body = {"turn_pk": current["turn_pk"], "passage_id": current["passage_id"], "grade": 3, "next": True}
        grades.append(
            client.post(
                reverse("relevance-api-grade", args=[current["slot"]]),
                body,
                content_type="application/json",
                HTTP_X_CSRFTOKEN=csrf,
            )
        )
        current = grades[-1].json().get("next") or {}

    assert step.status_code == 200
    assert [g.status_code for g in grades] == [201, 201, 201]
    assert grades[-1].json()["unit_complete"] is True
    assert RelevanceJudgment.objects.filter(judge__user=alice).count() == 3
    assert set(RelevanceJudgment.objects.values_list("grade", flat=True)) == {3}


def test_it_still_throttles_the_api_while_redis_is_down(redis_server, monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/hour", "anon": "3/hour"})
    client = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=_user()).key}")
    redis_server.stop()

    answers = [client.get("/api/collections/") for _ in range(5)]

    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    assert "throttled" in answers[-1].json()["detail"].lower()
    assert int(answers[-1]["Retry-After"]) > 0


def test_it_lets_a_leased_rate_through_whole_while_redis_is_down(redis_server, monkeypatch):
    # 400 an hour is counted in leases of 2 while Redis answers; while it is down, one by one in memory.
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "400/hour", "anon": "400/hour"})
    client = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=_user()).key}")
    redis_server.stop()

    codes = [client.get("/api/collections/").status_code for _ in range(401)]

    assert codes.count(200) == 400 and codes[-1] == 429


def test_it_counts_the_api_in_redis_again_once_it_returns(redis_server, monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/hour", "anon": "3/hour"})
    client = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=_user()).key}")
    redis_server.stop()
    during = [client.get("/api/collections/").status_code for _ in range(2)]
    redis_server.start()  # empty: the count starts again in Redis
    _past_the_cache_outage()

    after = [client.get("/api/collections/").status_code for _ in range(4)]

    assert during == [200, 200]
    assert after == [200, 200, 200, 429]


def test_it_still_locks_out_log_ins_while_redis_is_down(redis_server, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    alice = _user()
    redis_server.stop()
    client = Client()

    wrong = [
        client.post(reverse("login"), {"username": alice.username, "password": "wrong"}) for _ in range(3)
    ]
    right = client.post(reverse("login"), {"username": alice.username, "password": PASSWORD})
    token = client.post("/api/token/", {"username": alice.username, "password": PASSWORD})

    assert [w.status_code for w in wrong] == [200, 200, 429]
    assert right.status_code == 429
    assert token.status_code == 429
    assert SESSION_KEY not in client.session


def _view_of_a_strict_redis_user(request: HttpRequest) -> HttpResponse:
    raise RedisConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")


urlpatterns = [
    path("strict/", _view_of_a_strict_redis_user),
    path("api/strict/", _view_of_a_strict_redis_user),
]


@pytest.mark.urls("tests.test_redis_outage")
def test_it_answers_503_with_retry_after_where_a_redis_error_reaches_a_view(client):
    page = client.get("/strict/")
    api = client.get("/api/strict/")

    assert page.status_code == 503
    assert page["Retry-After"] == "5"
    assert b"back in a moment" in page.content
    assert api.status_code == 503
    assert api["Retry-After"] == "5"
    assert api.json() == {
        "detail": "The cache is unavailable; try again shortly.",
        "code": "cache_unavailable",
        "retry_after": 5,
    }
