"""The API's rate limits, counted atomically so that parallel clients cannot count less than they send.

DRF's SimpleRateThrottle reads a client's list of request times from the cache, appends one and writes
the list back: requests that run at the same time each read the same list and the last write wins, so
parallel scripts were let through far past the rate. Here each client has one integer per fixed window
of the rate's period, created with `cache.add` and raised with `cache.incr`, both atomic on Redis and on
Django's in-memory cache: every request is counted once, whatever runs beside it.

Windows start at multiples of the period since the epoch, so the time left in a window (Retry-After)
follows from the clock alone and needs no second cache entry. A client may send up to twice the rate
across a window boundary; that is the price of one counter, and far from the unbounded undercount.

Signed-out clients are told apart by address as the log-in limits tell them (core.client_address): DRF's
own reading believes anyone's X-Forwarded-For, so a script could take a fresh count with every request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import redis.exceptions
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
        try:
            count = self._count(self.cache, counter, self.duration)
        except redis.exceptions.RedisError:
            # The shared cache is down. Each process counts on its own until it is back: a runaway script
            # is still slowed (by as many limits as there are processes), and no request fails for it.
            # Failed log-ins are not counted here but by axes in the database, whole through an outage.
            count = self._count(_IN_PROCESS, counter, self.duration)
        return bool(count <= self.num_requests)

    @staticmethod
    def _count(cache: BaseCache, counter: str, duration: int) -> int:
        # The entry lives a whole period from its creation, so it outlasts the rest of its window.
        count_in_one_trip = getattr(cache, "count", None)  # assay.cache's Redis cache
        if count_in_one_trip is not None:
            return int(count_in_one_trip(counter, timeout=duration))
        cache.add(counter, 0, timeout=duration)
        try:
            return int(cache.incr(counter))
        except ValueError:  # evicted between add and incr: this request opens the count again
            cache.set(counter, 1, timeout=duration)
            return 1

    def get_ident(self, request: Request) -> str:
        # The relevance endpoints pass Django's request itself, DRF's views their wrapper of it.
        return client_address(getattr(request, "_request", request)) or ""

    def wait(self) -> float | None:
        """Seconds until the window ends and the count starts again from zero."""
        if self.window_end is None:
            return None
        return max(0.0, self.window_end - self.timer())


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
