"""The API's rate limits, counted atomically so that parallel clients cannot count less than they send.

DRF's SimpleRateThrottle reads a client's list of request times from the cache, appends one and writes
the list back: requests that run at the same time each read the same list and the last write wins, so
parallel scripts were let through far past the rate. Here each client has one integer per fixed window
of the rate's period, created with `cache.add` and raised with `cache.incr`, both atomic on Redis and on
Django's in-memory cache: every request is counted once, whatever runs beside it.

Windows start at multiples of the period since the epoch, so the time left in a window (Retry-After)
follows from the clock alone and needs no second cache entry. A client may send up to twice the rate
across a window boundary; that is the price of one counter, and far from the unbounded undercount.

A busy client's requests are counted in leases: a process takes a share of the window's count from the
cache at once (one round trip per `lease` requests instead of one per request, which for a script that
grades through the API was a third of the server's work per request) and lets that many through from
memory. The share is taken before any request it covers is let through, and never past the limit (the
last lease of a window is cut to what is left), so parallel clients still cannot pass the limit; what a
process leased and did not use when the window ends is counted but unused, so a client spread over P
processes may be stopped up to (lease - 1) x (P - 1) requests early: about 1% of the default rate. Rates
under LEASE_FROM requests per window are counted one by one, exactly.

Signed-out clients are told apart by address as the log-in limits tell them (core.client_address): DRF's
own reading believes anyone's X-Forwarded-For, so a script could take a fresh count with every request.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from rest_framework.authentication import TokenAuthentication
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

from core.client_address import client_address

if TYPE_CHECKING:  # rest_framework.views reads the throttle setting on import, which names this module
    from rest_framework.request import Request
    from rest_framework.views import APIView

# Where the counts go while the shared cache is unavailable: this process's memory.
_IN_PROCESS = LocMemCache("assay-throttle-counts", {"OPTIONS": {"MAX_ENTRIES": 100_000}})

# A rate of at least LEASE_FROM requests per window is counted in leases of 1/LEASE_FROM of it, at most
# LEASE_MAX requests each.
LEASE_FROM = 200
LEASE_MAX = 16


class _Leases:
    """What this process has leased and not yet let through, per counter of the current windows.

    One per process, shared by its threads (Django's cache objects are one per thread, which would
    multiply what is leased and unused by the threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.left: dict[tuple[str, str], int] = {}
        self.window: dict[str, int] = {}  # per cache: the window the entries are of, to drop older ones

    def take(self, cache: str, counter: str, window: int) -> bool:
        """Let one request through on a lease already held, if there is one left."""
        with self.lock:
            if self.window.get(cache) != window:
                self.window[cache] = window
                self.left = {k: v for k, v in self.left.items() if k[0] != cache}
                return False
            left = self.left.get((cache, counter), 0)
            if left <= 0:
                return False
            self.left[cache, counter] = left - 1
            return True

    def keep(self, cache: str, counter: str, window: int, count: int) -> None:
        with self.lock:
            if self.window.get(cache, window) == window and count > 0:
                self.window[cache] = window
                self.left[cache, counter] = self.left.get((cache, counter), 0) + count


_LEASES = _Leases()


class FixedWindowThrottle(SimpleRateThrottle):
    """At most `num_requests` per window of `duration` seconds per cache key; keys as DRF's throttles."""

    num_requests: int | None  # set by SimpleRateThrottle.__init__ from the rate
    duration: int | None
    window_end: float | None = None

    def allow_request(self, request: Request, view: APIView | None) -> bool:
        if self.rate is None or self.num_requests is None or self.duration is None:
            return True
        key: Any = self.get_cache_key(request, view)  # type: ignore[arg-type]  # DRF's keys ignore view
        if key is None:
            return True
        now = self.timer()
        window = int(now // self.duration)
        self.window_end = float((window + 1) * self.duration)
        counter = f"{key}:{window}"
        lease = min(LEASE_MAX, self.num_requests // LEASE_FROM) or 1
        where = _cache_name(self.cache)
        if lease > 1 and _LEASES.take(where, counter, window):
            return True
        try:
            count = self._count(self.cache, counter, self.duration, lease)
        except _redis_errors():
            # The shared cache is down. Each process counts on its own until it is back, one by one (its
            # memory is as near as a lease): a runaway script is still slowed (by as many limits as there
            # are processes), and no request fails for it. Failed log-ins are not counted here but by axes
            # in the database, whole through an outage.
            return self._count(_IN_PROCESS, counter, self.duration, 1) <= self.num_requests
        # This lease holds requests count - lease + 1 .. count of the window; those past the limit are not
        # granted. The first granted one is this request, the rest wait in memory for the next ones.
        granted = max(0, min(lease, self.num_requests - (count - lease)))
        if granted > 1:
            _LEASES.keep(where, counter, window, granted - 1)
        return granted > 0

    @staticmethod
    def _count(cache: BaseCache, counter: str, duration: int, by: int) -> int:
        # The entry lives a whole period from its creation, so it outlasts the rest of its window.
        count_in_one_trip = getattr(cache, "count", None)  # assay.cache's Redis cache
        if count_in_one_trip is not None:
            return int(count_in_one_trip(counter, timeout=duration, by=by))
        cache.add(counter, 0, timeout=duration)
        try:
            return int(cache.incr(counter, by))
        except ValueError:  # evicted between add and incr: this request opens the count again
            cache.set(counter, by, timeout=duration)
            return by

    def get_ident(self, request: Request) -> str:
        # The relevance endpoints pass Django's request itself, DRF's views their wrapper of it.
        return client_address(getattr(request, "_request", request)) or ""

    def wait(self) -> float | None:
        """Seconds until the window ends and the count starts again from zero."""
        if self.window_end is None:
            return None
        return max(0.0, self.window_end - self.timer())


def _redis_errors() -> tuple[type[Exception], ...]:
    # redis-py's errors exist only once it is loaded, which the Redis cache does with its first client
    # (assay/cache.py); with the cache in the process's memory nothing is imported, and nothing caught.
    errors = sys.modules.get("redis.exceptions")
    return (errors.RedisError,) if errors is not None else ()


def _cache_name(cache: BaseCache) -> str:
    """The same for every thread's object of one configured cache: its servers (Redis) or its store (the
    in-memory caches of one location share one dict), and its key prefix. Kept on the object: every
    throttled request asks."""
    name: str | None = getattr(cache, "_assay_throttle_name", None)
    if name is None:
        servers = getattr(cache, "_servers", None)
        where = ",".join(servers) if servers else f"{id(getattr(cache, '_cache', cache)):x}"
        name = f"{type(cache).__qualname__}:{where}:{cache.key_prefix}"
        setattr(cache, "_assay_throttle_name", name)  # noqa: B010  # not a declared attribute
    return name


class AnonFixedWindowThrottle(FixedWindowThrottle, AnonRateThrottle):
    """Signed-out clients, by address (DRF's `anon` scope and key)."""


class UserFixedWindowThrottle(FixedWindowThrottle, UserRateThrottle):
    """Signed-in clients, by user (DRF's `user` scope and key)."""


class ScriptFixedWindowThrottle(UserFixedWindowThrottle):
    """Signed-in clients by token only (the `user` scope): a person on a page of the site, signed in by
    session, goes at a person's pace and is not counted."""

    def allow_request(self, request: Request, view: APIView | None) -> bool:
        if not isinstance(request.successful_authenticator, TokenAuthentication):
            return True
        return super().allow_request(request, view)
