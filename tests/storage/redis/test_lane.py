"""The pipelined lane (storage/lane.py) through a faulty network: a stalled connection times out,
a cut one fails at once, and each time the next command gets a fresh connection."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from schooner.storage.keys import Keyspace
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis import client
from schooner.storage.redis.lane import PipelinedLane
from schooner.storage.store import Store
from tests.proxy import FaultProxy

pytestmark = pytest.mark.single_redis

TIMEOUT_MS = 500


def test_lane_times_out_and_reconnects(redis_server, keyspace) -> None:
    proxy = FaultProxy(redis_server.port, redis_server.password)
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


def test_a_new_connection_loads_a_script_before_its_first_call(redis_server, keyspace) -> None:
    """The server has no scripts (as after a restart, or on a replica just promoted): appends sent
    back to back on a new lane connection run at once and in order, none refused with NOSCRIPT and
    sent again behind the others."""
    asyncio.run(_appends_to_a_server_without_scripts(redis_server.url, keyspace))


async def _appends_to_a_server_without_scripts(url: str, keyspace: str) -> None:
    redis = client.connect(url)
    store = Store(redis, Keyspace(keyspace), PipelinedLane(redis))
    try:
        topic = await store.create_topic("t", 1, {}, {})
        await redis.script_flush()
        refused = await _noscript_errors(redis)
        now = int(time.time() * 1000)
        sent = [
            await store.send_append(topic, 0, RecordBatch([Record(now, None, b"%d" % i)])) for i in range(5)
        ]
        results = [await f for f in sent]
        assert [r.base_offset for r in results] == [0, 1, 2, 3, 4]
        assert await _noscript_errors(redis) == refused
        entries = await redis.xrange(store.ks.stream("t", 0))  # raw: [id, [field, value, ...]]
        assert [dict(zip(f[::2], f[1::2], strict=True))[b"value"] for _, f in entries] == [
            b"%d" % i for i in range(5)
        ]
    finally:
        await store.close()


async def _noscript_errors(redis: Any) -> int:
    stats = await redis.info("errorstats")
    return int(stats.get("errorstat_NOSCRIPT", {}).get("count", 0))
