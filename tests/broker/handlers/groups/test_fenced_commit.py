"""OffsetCommit is fenced by the owner epoch: a broker whose group was claimed by another broker since
its check is refused (NOT_COORDINATOR) and stores nothing; its next commit claims the group again."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from schooner.storage.groups import commits, state
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync
from tests import wire


def _commit(port: int, offset: int) -> list[ErrorCode]:
    partition = OffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_metadata=None
    )
    body = OffsetCommitRequest(
        group_id="fenced",
        member_id="",
        topics=(OffsetCommitRequestTopic(name="t", partitions=(partition,)),),
    )
    response = wire.call(port, body)
    return [p.error_code for t in response.topics for p in t.partitions]


def test_commit_after_another_broker_claimed_the_group(broker: Any) -> None:
    broker.call(broker.broker.ctx.topics.create("t", 1, {}))
    ks = Keyspace(broker.settings.keyspace)
    redis = client.connect_sync(broker.redis_url)
    assert _commit(broker.port, 5) == [ErrorCode.none]
    run_sync(redis, state.claim(ks, "fenced", 999))  # another broker takes the group over
    assert _commit(broker.port, 9) == [ErrorCode.not_coordinator]
    assert drive_sync(redis, commits.fetch(ks, "fenced"))[("t", 0)].offset == 5
    # The broker let the group go; asked again (it is still the group's coordinator by hash), it claims
    # the group anew and the commit is stored.
    assert _commit(broker.port, 9) == [ErrorCode.none]
    assert drive_sync(redis, commits.fetch(ks, "fenced"))[("t", 0)].offset == 9
