"""PipelinedLane.drive: procedures of round trips on the lane, as Store.read_many runs Fetch reads."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from schooner.storage.keys import Keyspace
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis import client
from schooner.storage.redis.calls import Steps, command
from schooner.storage.redis.lane import PipelinedLane
from schooner.storage.store import Store
from tests.proxy import FaultProxy

pytestmark = pytest.mark.single_redis


def _missing(exc: Exception) -> str:
    return f"missing: {type(exc).__name__}"


def _length(info: Any) -> int:
    """XINFO STREAM's length, from a RESP3 map or a RESP2 flat list."""
    fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=True))
    return int(fields[b"length"])


def _procedure(key: str) -> Steps[tuple[Any, ...]]:
    """Two round trips, the second built from the first's replies; a two-word command; an error reply
    turned into a value by on_error, and a parser."""
    added, info, absent = yield [
        command("XADD", key, "0-1", "f", "v"),
        command("XINFO STREAM", key, parse=_length),
        command("XINFO STREAM", f"{key}:none", on_error=_missing),
    ]
    (entries,) = yield [command("XRANGE", key, added, "+", parse=len)]
    return added, info, absent, entries


def test_drive_runs_each_round_trip_and_parses_replies(redis_server, keyspace) -> None:
    asyncio.run(_drive(redis_server.url, f"{keyspace}:s"))


async def _drive(url: str, key: str) -> None:
    redis = client.connect(url)
    lane = PipelinedLane(redis)
    try:
        added, length, absent, entries = await lane.drive(_procedure(key))
        assert (added, length, entries) == (b"0-1", 1, 1)
        assert absent == "missing: ResponseError"
        with pytest.raises(ResponseError):  # an error reply without on_error fails the procedure
            await lane.drive(_procedure(key))  # XADD 0-1 again: not greater than the last ID
        assert await (await lane.send("XLEN", key)) == 1  # the lane still serves
    finally:
        await lane.close()
        await redis.aclose()


def test_reads_on_the_read_lane_equal_the_clients(redis_server, keyspace) -> None:
    """A differential test: read_many through the read lane gives what redis-py's pipeline gives, for a
    partition with records, an empty one, from the middle, past the end, and read_committed."""
    asyncio.run(_same_reads(redis_server.url, keyspace))


async def _same_reads(url: str, keyspace: str) -> None:
    redis = client.connect(url)
    ks = Keyspace(keyspace)
    plain = Store(redis, ks, PipelinedLane(redis))
    laned = Store(redis, ks, plain.lane, read_lane=PipelinedLane(redis))
    try:
        topic = await plain.create_topic("t", 2, {}, {})
        now = int(time.time() * 1000)
        batch = RecordBatch([Record(now, b"k%d" % i, b"v%d" % i) for i in range(7)])
        await (await plain.send_append(topic, 0, batch))
        reads = [(topic, 0, 0, 100), (topic, 0, 3, 2), (topic, 0, 7, 100), (topic, 1, 0, 100)]
        for committed in (False, True):
            expected = await plain.read_many(reads, committed)
            assert [len(r.entries) for r in expected] == [7, 2, 0, 0]
            assert await laned.read_many(reads, committed) == expected
        assert laned.read_lane is not None and laned.read_lane._link is not None  # it went on the lane
    finally:
        await laned.close_lanes()
        await redis.aclose()


def test_a_read_lane_failure_is_a_storage_error_and_the_next_read_reconnects(redis_server, keyspace) -> None:
    proxy = FaultProxy(redis_server.port, redis_server.password)
    try:
        asyncio.run(_through_a_cut(redis_server.url, proxy, keyspace))
    finally:
        proxy.close()


async def _through_a_cut(url: str, proxy: FaultProxy, keyspace: str) -> None:
    redis = client.connect(url)
    through_proxy = client.connect(proxy.url)
    store = Store(
        redis, Keyspace(keyspace), PipelinedLane(redis), read_lane=PipelinedLane(through_proxy, 500)
    )
    try:
        topic = await store.create_topic("t", 1, {}, {})
        await (await store.send_append(topic, 0, RecordBatch([Record(int(time.time() * 1000), None, b"x")])))
        assert len((await store.read_many([(topic, 0, 0, 10)]))[0].entries) == 1
        proxy.cut()
        with pytest.raises(RedisConnectionError):
            await store.read_many([(topic, 0, 0, 10)])
        proxy.heal()
        assert len((await store.read_many([(topic, 0, 0, 10)]))[0].entries) == 1
    finally:
        await store.close_lanes()
        await redis.aclose()
        await through_proxy.aclose()
