"""A group's offset commits are applied in the order the broker received them, as Kafka applies them:
commits pipelined on one connection (librdkafka's asynchronous commits) never leave an older offset
stored after a newer one."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from tests import wire

COMMITS = 200


def _commit_body(group: str, offset: int) -> OffsetCommitRequest:
    partition = OffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_metadata=None
    )
    topic = OffsetCommitRequestTopic(name="ordered", partitions=(partition,))
    return OffsetCommitRequest(group_id=group, member_id="", topics=(topic,))


def test_pipelined_commits_store_the_last_offset(broker: Any) -> None:
    broker.call(broker.broker.ctx.topics.create("ordered", 1, {}))
    for trial in range(5):
        group = f"pipelined-{trial}"
        with wire.connect(broker.port) as sock:
            responses = wire.exchange(sock, [_commit_body(group, n) for n in range(1, COMMITS + 1)])
        assert {p.error_code for r in responses for t in r.topics for p in t.partitions} == {ErrorCode.none}
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
        try:
            (committed,) = consumer.committed([TopicPartition("ordered", 0)], timeout=10)
        finally:
            consumer.close()
        assert committed.offset == COMMITS


def test_librdkafka_asynchronous_commits_in_a_loop(broker: Any) -> None:
    broker.call(broker.broker.ctx.topics.create("ordered", 1, {}))
    for trial in range(10):
        group = f"async-{trial}"
        answered: list[Any] = []
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "on_commit": lambda err, partitions, answered=answered: answered.append(err),
            }
        )
        try:
            consumer.assign([TopicPartition("ordered", 0, 0)])
            for n in range(1, COMMITS + 1):
                consumer.commit(offsets=[TopicPartition("ordered", 0, n)], asynchronous=True)
            deadline = time.monotonic() + 20
            while len(answered) < COMMITS and time.monotonic() < deadline:
                consumer.poll(0.1)  # serves the commit callbacks
            assert answered == [None] * COMMITS
            (committed,) = consumer.committed([TopicPartition("ordered", 0)], timeout=10)
        finally:
            consumer.close()
        assert committed.offset == COMMITS, f"trial {trial}"
