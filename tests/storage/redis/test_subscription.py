"""The notice subscription read off its own connection (storage/redis/subscription.py): messages in order
however many come in one read, a quiet connection kept up with PINGs, a silent server detected, and
close() ending a read under way."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from schooner.storage.redis import client
from schooner.storage.redis.embedded import EmbeddedRedis
from schooner.storage.redis.subscription import Subscription

pytestmark = pytest.mark.single_redis


def _subscription(url: str, channel: str, quiet: float) -> tuple[client.Redis, Subscription]:
    redis_client = client.connect(url, 2000)
    return redis_client, Subscription(redis_client.connection_pool.make_connection, channel, quiet)


async def _burst(url: str, channel: str) -> None:
    redis_client, sub = _subscription(url, channel, 5.0)
    try:
        await sub.subscribe()
        assert await sub.next() is None  # the confirmation
        async with redis_client.pipeline(transaction=False) as pipe:
            for i in range(2000):
                pipe.publish(channel, b"m%d" % i)
            await pipe.execute()
        got = [await asyncio.wait_for(sub.next(), 5) for _ in range(2000)]
        assert got == [b"m%d" % i for i in range(2000)]
    finally:
        await sub.close()
        await redis_client.aclose()


def test_messages_arrive_in_order_however_many_come_at_once(
    redis_server: EmbeddedRedis, keyspace: str
) -> None:
    asyncio.run(_burst(redis_server.url, f"{keyspace}:burst"))


async def _quiet_then_message(url: str, channel: str) -> int:
    redis_client, sub = _subscription(url, channel, 0.2)
    try:
        await sub.subscribe()
        assert await sub.next() is None
        reader = asyncio.ensure_future(sub.next())
        await asyncio.sleep(1.2)  # six quiet periods: PINGed, answered, PINGed again
        assert not reader.done()
        await redis_client.publish(channel, b"late")
        assert await asyncio.wait_for(reader, 5) == b"late"
        info = await redis_client.info("commandstats")
        return int(info.get("cmdstat_ping", {}).get("calls", 0))
    finally:
        await sub.close()
        await redis_client.aclose()


def test_a_quiet_subscription_is_pinged_and_stays_up(redis_server: EmbeddedRedis, keyspace: str) -> None:
    pings = asyncio.run(_quiet_then_message(redis_server.url, f"{keyspace}:quiet"))
    assert pings >= 2


async def _silent_server(url: str, channel: str) -> float:
    redis_client, sub = _subscription(url, channel, 0.2)
    pauser = redis.Redis.from_url(url)
    try:
        await sub.subscribe()
        assert await sub.next() is None
        pauser.execute_command("CLIENT", "PAUSE", "3000", "ALL")  # the PING goes unanswered
        started = time.monotonic()
        with pytest.raises(RedisTimeoutError, match="no answer to PING"):
            await asyncio.wait_for(sub.next(), 5)
        return time.monotonic() - started
    finally:
        pauser.execute_command("CLIENT", "UNPAUSE")
        pauser.close()
        await sub.close()
        await redis_client.aclose()


def test_a_silent_server_fails_the_subscription(redis_server: EmbeddedRedis, keyspace: str) -> None:
    took = asyncio.run(_silent_server(redis_server.url, f"{keyspace}:silent"))
    assert took < 2.0  # a quiet period, then as long again for the PONG: not the pause's 3 s


async def _close_under_read(url: str, channel: str) -> None:
    redis_client, sub = _subscription(url, channel, 5.0)
    try:
        await sub.subscribe()
        assert await sub.next() is None
        reader = asyncio.ensure_future(sub.next())
        await asyncio.sleep(0.1)
        await sub.close()
        with pytest.raises(RedisConnectionError):
            await asyncio.wait_for(reader, 2)
    finally:
        await redis_client.aclose()


def test_close_ends_a_read_under_way(redis_server: EmbeddedRedis, keyspace: str) -> None:
    asyncio.run(_close_under_read(redis_server.url, f"{keyspace}:close"))
