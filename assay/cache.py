"""Django's Redis cache, with one redis client per server instead of one per call, that keeps answering
while Redis is down (OutageTolerantRedisCache, below).

Django's RedisCacheClient builds a new `redis.Redis` around its connection pool on every operation, and
building one costs more than the GET it then sends (its response-callback table is filled anew each
time). The client holds no connection of its own, only the pool, so keeping it is safe: the pool is
made lazily in the process that first uses it, and redis-py's pool resets itself in a forked child.

redis-py itself is imported by the first client made, as Django's own Redis client does: the settings name
this backend in every process, and importing redis costs a tenth of a second that a command or worker that
never reads the cache should not pay (tests/test_startup.py).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from django.core.cache.backends.redis import RedisCache, RedisCacheClient

if TYPE_CHECKING:
    from redis import Redis
    from redis.commands.core import Script

# The key and expiry types of Django's RedisCacheClient, whose methods the clients below override.
_Key: TypeAlias = str | bytes | memoryview
_Expiry: TypeAlias = int | timedelta
_T = TypeVar("_T")


class ReusingRedisCacheClient(RedisCacheClient):
    def __init__(self, servers: list[str], **options: Any) -> None:
        super().__init__(servers, **options)
        self._clients: dict[int, Redis] = {}

    def get_client(self, key: _Key | None = None, *, write: bool = False) -> Redis:
        # Keyed by the pool that Django's own choice of server (random among the readers) returns.
        django_client: Any = self  # the stubs do not declare the private helpers used here
        pool = django_client._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = django_client._client(connection_pool=pool)
        return client


# Redis runs a script whole, so no other client's command falls between the SET and the INCR: a key that
# expired in between cannot be raised by INCR into a counter without an expiry.
_COUNT_SCRIPT = """
redis.call('SET', KEYS[1], 0, 'EX', ARGV[1], 'NX')
return redis.call('INCRBY', KEYS[1], ARGV[2])
"""


class ReusingRedisCache(RedisCache):
    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient
        self._scripts: dict[int, Script] = {}  # the count script per client (redis-py's Script, by digest)

    def count(self, key: str, *, timeout: int, by: int = 1) -> int:
        """Add `by` to the counter `key` (made at 0, living `timeout` seconds, when missing) and return it.

        One round trip of one command, atomic (a script of SET NX EX and INCR, sent by its digest), where
        `add` then `incr` cost three round trips (Django's incr asks whether the key exists first) and a
        MULTI of the two four commands to send and answers to read: the API's throttle counts every request
        of every script.
        """
        full_key = self.make_and_validate_key(key)
        backend: Any = self  # the stubs do not declare RedisCache._cache
        client = backend._cache.get_client(full_key, write=True)
        script = self._scripts.get(id(client))
        if script is None:
            script = self._scripts[id(client)] = client.register_script(_COUNT_SCRIPT)
        return int(script(keys=[full_key], args=[timeout, by]))


# After a failure a process leaves Redis alone this long: a Redis that hangs rather than refuses costs one
# socket timeout per process and second, not one per call.
RETRY_AFTER_S = 1.0
# Keys written while Redis was unavailable that a process remembers, to delete them once it answers.
STALE_KEYS_KEPT = 100_000
logger = logging.getLogger("assay.cache")


class _Outage:
    """One process's view of one Redis: since when it fails, when to try it again, and the keys whose
    writes it dropped meanwhile (shared by the process's threads, which each have their own client)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.since: float | None = None
        self.retry_at = 0.0
        self.stale: set[_Key] = set()
        self.untracked = 0

    def failed(self, exc: Exception, writes: Iterable[_Key]) -> None:
        with self.lock:
            self._note(writes)
            now = time.monotonic()
            self.retry_at = now + RETRY_AFTER_S
            if self.since is None:
                self.since = now
                logger.warning(
                    "cache unavailable (%s): reads miss, writes are dropped and their keys deleted once "
                    "it answers",
                    exc,
                )

    def skipped(self, writes: Iterable[_Key]) -> None:
        with self.lock:
            self._note(writes)

    def _note(self, writes: Iterable[_Key]) -> None:
        for key in writes:
            if len(self.stale) < STALE_KEYS_KEPT:
                self.stale.add(key)
            else:
                self.untracked += 1

    def answered(self, deleted: int) -> None:
        with self.lock:
            if self.since is None:
                return
            logger.warning(
                "cache answers again after %.1f s; %d entries written meanwhile deleted",
                time.monotonic() - self.since,
                deleted,
            )
            if self.untracked:
                logger.error(
                    "cache: %d more writes were dropped than could be remembered; those entries may be "
                    "stale until they expire",
                    self.untracked,
                )
            self.since, self.untracked = None, 0


_outages: dict[tuple[str, ...], _Outage] = {}
_outages_lock = threading.Lock()


class OutageTolerantRedisCacheClient(ReusingRedisCacheClient):
    """Reads miss and writes are dropped while Redis is unavailable; counters (`incr`) raise, for their
    callers to choose what a count that cannot be made means.

    Every user of this cache keeps its record elsewhere or can do without it (sessions are read through
    from the database, import progress falls back to the job's row), so a miss is always an answer. A
    dropped write or delete leaves Redis with an entry older than the record, which a Redis that comes
    back with its data (a network split, a Redis that saves to disk) would serve: its key is remembered and
    deleted before anything else once Redis answers, so a session signed out meanwhile stays signed out.
    """

    def __init__(self, servers: list[str], **options: Any) -> None:
        # Imported with the first client, not at start-up (the module's docstring).
        from redis import exceptions as errors
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # One immediate retry, for a pooled connection that a restarted Redis dropped; redis-py's default
        # backs off and retries three times, which every call of every request would wait through.
        options.setdefault("retry", Retry(NoBackoff(), 1))
        super().__init__(servers, **options)
        # What an unreachable, restarting, read-only or full Redis raises (BusyLoadingError, while it loads
        # its data after a restart, is a ConnectionError). Other errors are the caller's bugs: they stay.
        self._unavailable: tuple[type[Exception], ...] = (
            errors.ConnectionError,
            errors.TimeoutError,
            errors.ReadOnlyError,
            errors.OutOfMemoryError,
        )
        self._connection_error = errors.ConnectionError
        with _outages_lock:
            self._outage = _outages.setdefault(tuple(servers), _Outage())

    def _run(self, call: Callable[..., _T], *args: object, writes: Iterable[_Key] = ()) -> _T:
        outage = self._outage
        if outage.since is not None and time.monotonic() < outage.retry_at:
            outage.skipped(writes)
            raise self._connection_error(f"the cache failed less than {RETRY_AFTER_S} s ago")
        try:
            deleted = self._delete_stale() if outage.stale else 0
            result = call(*args)
        except self._unavailable as exc:
            outage.failed(exc, writes)
            raise
        if outage.since is not None:
            outage.answered(deleted)
        return result

    def _delete_stale(self) -> int:
        with self._outage.lock:
            keys = list(self._outage.stale)
        for start in range(0, len(keys), 1000):
            super().delete_many(keys[start : start + 1000])
        with self._outage.lock:
            self._outage.stale.difference_update(keys)
        return len(keys)

    def _or(self, miss: _T, call: Callable[..., _T], *args: object, writes: Iterable[_Key] = ()) -> _T:
        try:
            return self._run(call, *args, writes=writes)
        except self._unavailable:
            return miss

    def get(self, key: _Key, default: Any) -> Any:
        return self._or(default, super().get, key, default)

    def get_many(self, keys: Iterable[_Key]) -> dict[_Key, Any]:
        return self._or({}, super().get_many, keys)

    def has_key(self, key: _Key) -> bool:
        return self._or(False, super().has_key, key)

    def add(self, key: _Key, value: object, timeout: _Expiry | None) -> bool:
        return self._or(False, super().add, key, value, timeout, writes=[key])

    def set(self, key: _Key, value: object, timeout: _Expiry | None) -> None:
        return self._or(None, super().set, key, value, timeout, writes=[key])

    def set_many(self, data: Mapping[_Key, object], timeout: _Expiry) -> None:
        return self._or(None, super().set_many, data, timeout, writes=list(data))

    def touch(self, key: _Key, timeout: _Expiry) -> bool:
        return self._or(False, super().touch, key, timeout, writes=[key])

    def delete(self, key: _Key) -> bool:
        return self._or(False, super().delete, key, writes=[key])

    def delete_many(self, keys: Iterable[_Key]) -> None:
        return self._or(None, super().delete_many, keys, writes=list(keys))

    def clear(self) -> bool:
        return self._or(False, super().clear)

    def incr(self, key: _Key, delta: int) -> int:
        return self._run(super().incr, key, delta)


class OutageTolerantRedisCache(ReusingRedisCache):
    """The cache CACHE_URL names: Django's Redis cache that keeps answering while Redis does not."""

    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = OutageTolerantRedisCacheClient

    def count(self, key: str, *, timeout: int, by: int = 1) -> int:
        """As ReusingRedisCache.count, and like `incr` it raises while Redis is unavailable."""
        backend: Any = self  # the stubs do not declare RedisCache._cache
        return int(backend._cache._run(functools.partial(super().count, key, timeout=timeout, by=by)))


def redis_cache_settings(url: str, *, timeout_s: float) -> dict[str, Any]:
    """The CACHES entry for a Redis URL; `timeout_s` bounds each connect and each answer, so that a Redis
    that hangs is an outage too rather than a request that waits for ever."""
    return {
        "BACKEND": "assay.cache.OutageTolerantRedisCache",
        "LOCATION": url,
        "OPTIONS": {"socket_connect_timeout": timeout_s, "socket_timeout": timeout_s},
    }
