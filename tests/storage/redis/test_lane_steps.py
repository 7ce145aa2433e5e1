"""A Steps procedure run on the pipelined lane (storage/redis/lane_steps.py) gives what drive() gives
through redis-py, two-word commands included; a failed call raises after every reply has come."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.exceptions import ResponseError

from schooner.storage.redis import client
from schooner.storage.redis.calls import Steps, command, drive, together
from schooner.storage.redis.lane import PipelinedLane
from schooner.storage.redis.lane_steps import drive_on_lane

pytestmark = pytest.mark.single_redis


def _none(_: Exception) -> None:
    return None


def test_lane_runs_steps_like_drive(redis_server, keyspace) -> None:
    asyncio.run(_compare(redis_server.url, keyspace))


async def _compare(url: str, keyspace: str) -> None:
    redis = client.connect(url, 5000)
    lane = PipelinedLane(redis, 5000)
    stream, missing = f"{keyspace}:s", f"{keyspace}:missing"
    try:
        await redis.execute_command("XADD", stream, "0-1", "value", b"v1")
        await redis.execute_command("XADD", stream, "0-2", "value", b"v2")

        def steps() -> Steps[list[Any]]:
            return together(
                [
                    command("XRANGE", stream, "0-1", "+", "COUNT", 10),
                    command("XINFO STREAM", stream),
                    command("XINFO STREAM", missing, on_error=_none),  # an error reply, answered
                    command("HMGET", f"{keyspace}:h", "a"),
                ]
            )

        on_lane = await drive_on_lane(lane, steps())
        assert on_lane == await drive(redis, steps())
        assert on_lane[0] == [[b"0-1", [b"value", b"v1"]], [b"0-2", [b"value", b"v2"]]]
        assert on_lane[2] is None and on_lane[3] == [None]
        with pytest.raises(ResponseError):  # no on_error: the call's error is raised
            await drive_on_lane(lane, together([command("XINFO STREAM", missing), command("PING")]))
        assert await drive_on_lane(lane, together([command("PING")])) == [b"PONG"]  # the lane goes on
    finally:
        await lane.close()
        await redis.aclose()
