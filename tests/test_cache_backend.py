import os

import pytest

from assay.cache import ReusingRedisCache

pytestmark = pytest.mark.skipif(not os.environ.get("REDIS_TEST_URL"), reason="needs REDIS_TEST_URL")


def test_one_redis_client_serves_every_call_and_the_values_round_trip() -> None:
    cache = ReusingRedisCache(os.environ["REDIS_TEST_URL"], {"KEY_PREFIX": "test-cache-backend"})
    client = cache._cache.get_client(None)
    assert cache._cache.get_client("other", write=True) is client

    cache.set("k", {"a": 1}, 30)
    assert cache.get("k") == {"a": 1}
    cache.delete("k")
    assert cache.get("k") is None


def test_it_counts_in_one_command_that_starts_at_one_and_expires() -> None:
    cache = ReusingRedisCache(os.environ["REDIS_TEST_URL"], {"KEY_PREFIX": "test-cache-backend"})
    cache.delete("counter")
    client = cache._cache.get_client(None)
    client.script_flush()  # as after a Redis restart: the script is loaded again by itself

    counts = [cache.count("counter", timeout=30) for _ in range(3)]

    assert counts == [1, 2, 3]
    assert 0 < client.ttl(cache.make_and_validate_key("counter")) <= 30
    cache.delete("counter")
