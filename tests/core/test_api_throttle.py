"""The API throttles count every request once, even when a client's requests run in parallel."""

from __future__ import annotations

import os
import sys
import threading
import uuid

import pytest
from django.test import RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from core.throttling import AnonFixedWindowThrottle, FixedWindowThrottle, UserFixedWindowThrottle
from tests.factories import UserFactory

LIMIT = 10
THREADS = 40
TRIES_PER_THREAD = 5


@pytest.fixture(params=["locmem", "redis"])
def real_cache(request, settings):
    """The cache the throttles count in: Django's in-memory one, and Redis when REDIS_TEST_URL names one."""
    location = f"throttle-{uuid.uuid4().hex}"
    if request.param == "redis":
        if not os.environ.get("REDIS_TEST_URL"):
            pytest.skip("needs REDIS_TEST_URL")
        backend = {"BACKEND": "assay.cache.ReusingRedisCache", "LOCATION": os.environ["REDIS_TEST_URL"]}
        settings.CACHES = {"default": backend | {"KEY_PREFIX": location}}
    else:
        settings.CACHES = {
            "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": location}
        }
    return request.param


@pytest.fixture
def rates(monkeypatch):
    # A day's window: a parallel burst never straddles two windows, whose counts would add up.
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"user": f"{LIMIT}/day", "anon": f"{LIMIT}/day"}
    )


def _allowed_in_parallel(throttle_class: type[SimpleRateThrottle], request) -> int:
    """Every thread sends its requests at once (behind a barrier); how many the throttle let through."""
    barrier = threading.Barrier(THREADS)
    allowed: list[bool] = []
    lock = threading.Lock()

    def client() -> None:
        barrier.wait()
        for _ in range(TRIES_PER_THREAD):
            answer = throttle_class().allow_request(request, None)
            with lock:
                allowed.append(answer)

    # Threads switch often, as the workers of a busy server would interleave.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=client) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(allowed) == THREADS * TRIES_PER_THREAD
    return sum(allowed)


@pytest.mark.django_db
def test_it_lets_exactly_the_limit_through_for_one_user_in_parallel(real_cache, rates):
    request = RequestFactory().get("/api/collections/")
    request.user = UserFactory()

    assert _allowed_in_parallel(UserFixedWindowThrottle, request) == LIMIT


def test_it_lets_exactly_the_limit_through_for_one_address_in_parallel(real_cache, rates):
    from django.contrib.auth.models import AnonymousUser

    request = RequestFactory().get("/api/collections/", REMOTE_ADDR="192.0.2.7")
    request.user = AnonymousUser()

    assert _allowed_in_parallel(AnonFixedWindowThrottle, request) == LIMIT


@pytest.mark.django_db
def test_it_counts_each_user_and_each_address_apart(real_cache, rates):
    from django.contrib.auth.models import AnonymousUser

    factory = RequestFactory()
    alice, bob = factory.get("/"), factory.get("/")
    alice.user, bob.user = UserFactory(), UserFactory()
    here, there = factory.get("/", REMOTE_ADDR="192.0.2.1"), factory.get("/", REMOTE_ADDR="192.0.2.2")
    here.user = there.user = AnonymousUser()

    spent = [UserFixedWindowThrottle().allow_request(alice, None) for _ in range(LIMIT + 1)]
    spent_anon = [AnonFixedWindowThrottle().allow_request(here, None) for _ in range(LIMIT + 1)]

    assert spent == [True] * LIMIT + [False]
    assert spent_anon == [True] * LIMIT + [False]
    assert UserFixedWindowThrottle().allow_request(bob, None)
    assert AnonFixedWindowThrottle().allow_request(there, None)
    # Each throttle keeps to its own kind of client, as DRF's do.
    assert AnonFixedWindowThrottle().allow_request(alice, None)


@pytest.mark.django_db
def test_it_answers_429_past_the_limit_with_the_seconds_left_in_the_window(monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "3/minute"})
    clock = {"now": 60 * 1_000_000 + 15.25}
    monkeypatch.setattr(FixedWindowThrottle, "timer", staticmethod(lambda: clock["now"]))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=UserFactory()).key}")

    allowed = [api.get("/api/collections/").status_code for _ in range(3)]
    limited = api.get("/api/collections/")
    clock["now"] += 45  # the next minute: a new window
    again = api.get("/api/collections/")

    assert allowed == [200, 200, 200]
    assert limited.status_code == 429
    assert limited["Retry-After"] == "45"  # 44.75 s left of the minute, rounded up
    assert "throttled" in limited.json()["detail"].lower()
    assert again.status_code == 200


LEASED = 3210  # per day: counted in leases of 16 requests, the last one cut to 10


@pytest.fixture
def leased_rates(monkeypatch):
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"user": f"{LEASED}/day", "anon": f"{LEASED}/day"}
    )


def _burst(request, threads: int, tries: int) -> int:
    allowed: list[bool] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def client() -> None:
        barrier.wait()
        for _ in range(tries):
            answer = UserFixedWindowThrottle().allow_request(request, None)
            with lock:
                allowed.append(answer)

    workers = [threading.Thread(target=client) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(allowed)


@pytest.mark.django_db
def test_a_high_rate_counted_in_leases_still_lets_exactly_the_limit_through_in_parallel(
    real_cache, leased_rates
):
    request = RequestFactory().get("/api/collections/")
    request.user = UserFactory()

    assert _burst(request, threads=20, tries=200) == LEASED  # of 4,000 tries


@pytest.mark.django_db
def test_processes_leasing_apart_never_pass_the_limit_and_stop_at_most_a_lease_early(
    real_cache, leased_rates, monkeypatch
):
    import core.throttling as throttling

    request = RequestFactory().get("/api/collections/")
    request.user = UserFactory()
    processes = [throttling._Leases(), throttling._Leases(), throttling._Leases()]
    allowed = 0
    for attempt in range(4000):  # each request served by the next process in turn
        monkeypatch.setattr(throttling, "_LEASES", processes[attempt % 3])
        allowed += UserFixedWindowThrottle().allow_request(request, None)

    lease = throttling.LEASE_MAX
    assert LEASED - (lease - 1) * 2 <= allowed <= LEASED


@pytest.mark.django_db
def test_leases_left_over_from_past_windows_are_let_go(real_cache, leased_rates, monkeypatch):
    import core.throttling as throttling

    leases = throttling._Leases()
    monkeypatch.setattr(throttling, "_LEASES", leases)
    clock = {"now": 86_400 * 20_000 + 10.0}
    monkeypatch.setattr(FixedWindowThrottle, "timer", staticmethod(lambda: clock["now"]))
    users = [UserFactory() for _ in range(3)]
    allowed = []
    for _day in range(30):
        for user in users:  # each leaves 15 of its lease of 16 unused at the day's end
            request = RequestFactory().get("/api/collections/")
            request.user = user
            allowed.append(UserFixedWindowThrottle().allow_request(request, None))
        clock["now"] += 86_400

    assert all(allowed)
    assert sorted(leases.left.values()) == [15, 15, 15]  # today's only: memory does not grow by the day
