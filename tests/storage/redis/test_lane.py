"""The pipelined lane (storage/lane.py) through a faulty network: a stalled connection times out,
a cut one fails at once, and each time the next command gets a fresh connection."""

from __future__ import annotations

import asyncio
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from schooner.storage.redis import client
from schooner.storage.redis.lane import PipelinedLane
from tests.proxy import FaultProxy

pytestmark = pytest.mark.single_redis

TIMEOUT_MS = 500


def test_lane_times_out_and_reconnects(redis_server, keyspace) -> None:
    proxy = FaultProxy(redis_server.port)
    try:
        asyncio.run(_through_faults(proxy, f"{keyspace}:n"))
    finally:
        proxy.close()


async def _through_faults(proxy: FaultProxy, key: str) -> None:
    redis = client.connect(proxy.url, TIMEOUT_MS)
    lane = PipelinedLane(redis, TIMEOUT_MS)
    try:
        assert await (await lane.send("INCR", key)) == 1

        proxy.stall()
        started = time.monotonic()
        first, second = await lane.send("INCR", key), await lane.send("INCR", key)
        with pytest.raises(RedisTimeoutError):
            await asyncio.wait_for(first, 5)  # without the lane's own timeout this would wait for ever
        with pytest.raises(RedisTimeoutError):  # everything waiting on that connection fails with it
            await second
        assert TIMEOUT_MS / 1000 <= time.monotonic() - started < TIMEOUT_MS / 1000 + 0.5
        proxy.heal()
        # A new connection: its replies are its own, whatever the old one delivers late.
        assert await (await lane.send("SET", f"{key}:x", "fresh")) == b"OK"
        assert await (await lane.send("GET", f"{key}:x")) == b"fresh"

        proxy.cut()
        started = time.monotonic()
        with pytest.raises(RedisConnectionError):
            await (await lane.send("INCR", key))
        assert time.monotonic() - started < 0.5  # refused: no need to wait for the timeout
        proxy.heal()
        assert await (await lane.send("GET", f"{key}:x")) == b"fresh"
    finally:
        await lane.close()
        await redis.aclose()
