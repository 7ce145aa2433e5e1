"""A coordinator stalled (SIGSTOP) longer than its registration lasts: another broker takes the group
over and stores newer commits. Commits the stalled broker's socket held meanwhile were meant for the
coordinator that let the group go, and the client sent them again to the next one: once it runs again
they are answered NOT_COORDINATOR, never stored under the claim it makes on its return (which would set
the group's offsets back), and the broker coordinates the group again for what clients send after."""

from __future__ import annotations

import os
import signal
import zlib
from typing import Any

import redis
from kio.schema.errors import ErrorCode
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from schooner.storage.keys import Keyspace
from tests import wire
from tests.broker.helpers import committed, wait


def _commit(group: str, offset: int) -> OffsetCommitRequest:
    partition = OffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_metadata=None
    )
    return OffsetCommitRequest(
        group_id=group, member_id="", topics=(OffsetCommitRequestTopic(name="t", partitions=(partition,)),)
    )


def _errors(response: Any) -> list[ErrorCode]:
    return [p.error_code for t in response.topics for p in t.partitions]


def _stored(port: int, group: str, offset: int) -> bool:
    return _errors(wire.call(port, _commit(group, offset))) == [ErrorCode.none]


def _broker_id(client: redis.Redis, ks: Keyspace, port: int) -> int:
    ids = [int(raw) for raw in client.zrange(ks.brokers, 0, -1)]
    return next(i for i in ids if client.hget(ks.broker(i), "port") == str(port).encode())


def test_commits_held_by_a_stalled_coordinator_never_set_offsets_back(
    broker_factory, redis_client: redis.Redis, keyspace: str
) -> None:
    ks = Keyspace(keyspace)
    stalled = broker_factory(process=True)  # registration lasts 2 s (SCHOONER_SESSION_MS)
    other = broker_factory(heartbeat_ms=300, session_ms=2000)
    other.call(other.broker.ctx.topics.create("t", 1, {}))
    ids = sorted([_broker_id(redis_client, ks, stalled.port), other.broker_id])
    # A group that the stalled broker coordinates while both are live (by hash over the live brokers).
    group = next(
        g for g in (f"stalled-{i}" for i in range(100)) if ids[zlib.crc32(g.encode()) % 2] != other.broker_id
    )
    wait(lambda: _stored(stalled.port, group, 5), 10, "the coordinator stores a commit")

    held = wire.connect(stalled.port)
    os.kill(stalled.process.pid, signal.SIGSTOP)
    try:
        # Two commits wait in the stopped broker's socket (the first one back is fenced by the owner
        # epoch; the second found the group let go and claimed it anew, and was stored).
        held.sendall(wire.encode_request(_commit(group, 10), 0) + wire.encode_request(_commit(group, 11), 1))
        # Its registration lapses; the other broker takes the group over and stores a newer commit.
        wait(lambda: _stored(other.port, group, 20), 20, "the other broker takes the group over")
        assert committed(redis_client, ks, group) == {"t:0": 20}
    finally:
        os.kill(stalled.process.pid, signal.SIGCONT)

    answers = []
    for _ in range(2):
        frame = wire.read_frame(held)
        assert frame is not None, "connection closed"
        answers.append(wire.decode_response(frame, 8, 8, True))  # v8 has the flexible header
    held.close()
    assert [(cid, _errors(r)) for cid, r in answers] == [
        (0, [ErrorCode.not_coordinator]),
        (1, [ErrorCode.not_coordinator]),
    ]
    assert committed(redis_client, ks, group) == {"t:0": 20}
    # Registered again, it coordinates the group again: what clients send from now on is stored.
    wait(lambda: _stored(stalled.port, group, 30), 20, "the broker coordinates the group again")
    assert committed(redis_client, ks, group) == {"t:0": 30}
