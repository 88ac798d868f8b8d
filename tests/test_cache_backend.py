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
