"""The lane hands a raw call (a fetch's XRANGE) its reply as the RESP bytes it came in: among other calls,
errors and replies split across chunks at any byte, on a real Redis, each caller gets its own reply."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import hiredis
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from schooner.storage.log.raw_entries import RawEntries, entries_of
from schooner.storage.redis import client
from schooner.storage.redis.calls import command, raw_command
from schooner.storage.redis.lane import PipelinedLane
from tests.compiled import ON

pytestmark = pytest.mark.single_redis


def test_raw_replies_among_others_on_a_real_redis(redis_server, keyspace) -> None:
    asyncio.run(_among_others(redis_server.url, keyspace))


async def _among_others(url: str, keyspace: str) -> None:
    redis = client.connect(url)
    lane = PipelinedLane(redis)
    stream, text = f"{keyspace}:s", f"{keyspace}:x"
    try:
        pipe = redis.pipeline(transaction=False)
        for i in range(3000):  # about 400 kB of reply: many chunks
            pipe.xadd(stream, {"timestamp": b"5", "value": b"%d" % i + b"v" * 100}, id=f"0-{i + 1}")
        pipe.set(text, "plain")
        await pipe.execute()
        expected = await redis.xrange(stream)
        calls = [
            command("GET", text),
            raw_command("XRANGE", stream, "-", "+", parse=entries_of),
            command("INCR", f"{keyspace}:n"),
            raw_command("XRANGE", text, "-", "+", parse=entries_of),  # WRONGTYPE: an error, raw or not
            raw_command("XRANGE", stream, "0-10", "0-12", parse=entries_of),
            raw_command("XRANGE", f"{keyspace}:none", "-", "+", parse=entries_of),
            command("GET", text),
        ]
        futures = [await lane.send_call(c) for c in calls]
        got = await asyncio.gather(*futures, return_exceptions=True)
        assert got[0] == b"plain" and got[2] == 1 and got[6] == b"plain"
        assert isinstance(got[3], ResponseError) and "WRONGTYPE" in str(got[3])
        assert (type(got[1]) is RawEntries) == ON or got[1] == expected  # raw where it can be read
        assert got[1] == expected and len(got[1]) == 3000 and got[1][-1][0] == b"0-3000"
        assert list(got[4]) == expected[9:12] and got[5] == []
        assert await (await lane.send("GET", text)) == b"plain"  # the lane goes on as before
    finally:
        await lane.close()
        await redis.aclose()


def test_replies_cut_at_every_byte_reach_their_callers(redis_server) -> None:
    asyncio.run(_cut_at_every_byte(redis_server.url))


ENTRIES = (
    b"*2\r\n*2\r\n$3\r\n0-1\r\n*2\r\n$5\r\nvalue\r\n$2\r\nab\r\n"
    b"*2\r\n$3\r\n0-2\r\n*2\r\n$5\r\nvalue\r\n$0\r\n\r\n"
)
REPLIES = [b"+OK\r\n", ENTRIES, b"-ERR no\r\n", b"*0\r\n", b"$3\r\nabc\r\n", ENTRIES, b":7\r\n"]
RAW = [False, True, True, True, False, True, False]


@contextlib.asynccontextmanager
async def _connected_lane(url: str) -> AsyncIterator[tuple[PipelinedLane, Any]]:
    """A lane connected to Redis, and its connection's link, to queue calls on and feed bytes to."""
    redis = client.connect(url)
    lane = PipelinedLane(redis)
    try:
        assert await (await lane.send("PING")) == b"PONG"
        assert lane._link is not None
        yield lane, lane._link
    finally:
        await lane.close()
        await redis.aclose()


async def _cut_at_every_byte(url: str) -> None:
    """Replies fed to the lane one byte at a time (then in two pieces cut at every byte), as a slow
    network would deliver them, after the calls were queued as send_call queues them."""
    async with _connected_lane(url) as (lane, link):
        stream = b"".join(REPLIES)
        cuttings = [[stream[i : i + 1] for i in range(len(stream))]]
        cuttings += [[stream[:i], stream[i:]] for i in range(1, len(stream))]
        for pieces in cuttings:
            loop = asyncio.get_running_loop()
            futures = []
            for raw in RAW:
                future: asyncio.Future[Any] = loop.create_future()
                call = raw_command("XRANGE", parse=entries_of) if raw else command("X")
                link.waiting.append((future, loop.time(), call))
                link.raw_owed += raw
                futures.append(future)
            for piece in pieces:
                lane._received(link, piece)
            got = [f.exception() or f.result() for f in futures]
            assert got[0] == b"OK" and got[4] == b"abc" and got[6] == 7
            assert isinstance(got[2], ResponseError) and str(got[2]) == "no"
            assert got[1] == got[5] == _parsed(ENTRIES) and got[3] == []
            assert link.raw_owed == 0 and not link.waiting and not link.pending and lane._link is link


def test_bytes_that_are_not_resp_end_the_connection(redis_server) -> None:
    asyncio.run(_not_resp(redis_server.url))


async def _not_resp(url: str) -> None:
    async with _connected_lane(url) as (lane, link):
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        link.waiting.append((future, loop.time(), raw_command("XRANGE", parse=entries_of)))
        link.raw_owed += 1
        lane._received(link, b"?garbage\r\n")
        with pytest.raises(RedisConnectionError, match="bad reply"):
            await future
        assert lane._link is None  # dropped: the next command opens a new connection
        assert await (await lane.send("PING")) == b"PONG"


def _parsed(reply: bytes) -> Any:
    reader = hiredis.Reader()
    reader.feed(reply)
    return reader.gets()
