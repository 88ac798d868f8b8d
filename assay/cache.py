"""Django's Redis cache, with one redis client per server instead of one per call.

Django's RedisCacheClient builds a new `redis.Redis` around its connection pool on every operation, and
building one costs more than the GET it then sends (its response-callback table is filled anew each
time). The client holds no connection of its own, only the pool, so keeping it is safe: the pool is
made lazily in the process that first uses it, and redis-py's pool resets itself in a forked child.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class ReusingRedisCacheClient(RedisCacheClient):
    def __init__(self, servers: list[str], **options: Any) -> None:
        super().__init__(servers, **options)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # Keyed by the pool that Django's own choice of server (random among the readers) returns.
        django_client: Any = self  # the stubs do not declare the private helpers used here
        pool = django_client._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = django_client._client(connection_pool=pool)
        return client


class ReusingRedisCache(RedisCache):
    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient

    def count(self, key: str, *, timeout: int) -> int:
        """Add one to the counter `key` (made at 0, living `timeout` seconds, when missing) and return it.

        One round trip, atomic (a MULTI of SET NX EX and INCR), where `add` then `incr` cost three
        (Django's incr asks whether the key exists first): the API's throttle counts every request.
        """
        full_key = self.make_and_validate_key(key)
        backend: Any = self  # the stubs do not declare RedisCache._cache
        client = backend._cache.get_client(full_key, write=True)
        pipe = client.pipeline(transaction=True)
        pipe.set(full_key, 0, ex=timeout, nx=True)
        pipe.incr(full_key)
        return int(pipe.execute()[1])
