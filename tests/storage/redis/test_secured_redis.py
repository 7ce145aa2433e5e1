"""Credentials and TLS in the Redis URL reach every connection storage makes: the client's pool, pub/sub,
the blocking client, and the append lane, which opens its own connection."""

from __future__ import annotations

import asyncio

import pytest
import redis

from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.embedded import EmbeddedRedis
from schooner.storage.redis.lane import PipelinedLane
from schooner.storage.topics.notices import TopicNotices
from tests.conftest import with_user

# tls_redis is one server; an ACL user on a cluster is tested in tests/cluster.
pytestmark = pytest.mark.single_redis


async def _round_trips(url: str, ks: Keyspace) -> None:
    redis_client = client.connect(url, 2000)
    lane = PipelinedLane(redis_client, 2000)
    notices = TopicNotices(redis_client, ks, 2.0)
    try:
        key = ks.topic_names
        await redis_client.sadd(key, "a")
        assert await (await lane.send("SADD", key, "b")) == 1  # the lane's own connection
        assert await redis_client.smembers(key) == {b"a", b"b"}
        await notices.subscribe()
        assert await notices.next() is None  # subscribed on a connection of its own
        await redis_client.publish(ks.topics_channel, "orders")
        assert await notices.next() == b"orders"
    finally:
        await notices.close()
        await lane.close()
        await redis_client.aclose()


def test_tls_with_a_password_and_a_client_certificate(tls_redis: EmbeddedRedis, keyspace: str) -> None:
    assert tls_redis.url.startswith("rediss://") and "ssl_certfile=" in tls_redis.url
    asyncio.run(_round_trips(tls_redis.url, Keyspace(keyspace)))
    # Commands keep being packed by hiredis over TLS.
    packed = client.connect(tls_redis.url).connection_pool.connection_class
    assert packed is client.HiredisPackedSSLConnection
    blocking = client.connect_sync(tls_redis.url)
    try:
        assert blocking.ping()
    finally:
        blocking.close()


def test_tls_refuses_what_the_url_does_not_carry(tls_redis: EmbeddedRedis) -> None:
    """The server checks all three, so the round trips above show that each one was carried."""
    without_certificate = tls_redis.url.split("&ssl_certfile=")[0]
    plain = tls_redis.url.replace("rediss://", "redis://").split("?")[0]
    wrong_password = with_user(tls_redis.url, "default", "wrong")
    for url in (without_certificate, plain, wrong_password):
        with redis.Redis.from_url(url, socket_timeout=5) as c, pytest.raises(redis.RedisError):
            c.ping()


def test_an_acl_user_of_the_keyspace(acl_redis_url: str, keyspace: str) -> None:
    assert "@" in acl_redis_url and not acl_redis_url.startswith("redis://:")
    asyncio.run(_round_trips(acl_redis_url, Keyspace(keyspace)))
