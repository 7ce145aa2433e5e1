"""Redis goes away: clients get retriable errors (never UNKNOWN_SERVER_ERROR), and service resumes."""

from __future__ import annotations

import time

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic

from tests.clients import Rec, confluent_consume, confluent_produce
from tests.wire import call, produce_request

pytestmark = pytest.mark.single_redis

RETRIABLE = {ErrorCode.kafka_storage_error, ErrorCode.request_timed_out, ErrorCode.not_leader_or_follower}


def test_redis_outage_gives_retriable_errors_then_recovers(broker, redis_server) -> None:
    confluent_produce(broker.bootstrap, "outage", [Rec(None, b"before")])
    redis_server.kill()
    try:
        produced = call(broker.port, produce_request("outage", [b"during outage"]))
        assert produced.responses[0].partition_responses[0].error_code in RETRIABLE
        listed = call(
            broker.port,
            ListOffsetsRequest(
                replica_id=-1,
                isolation_level=0,
                topics=(
                    ListOffsetsTopic(
                        name="outage",
                        partitions=(
                            ListOffsetsPartition(partition_index=0, timestamp=-1, current_leader_epoch=-1),
                        ),
                    ),
                ),
            ),
        )
        assert listed.topics[0].partitions[0].error_code in RETRIABLE
    finally:
        redis_server.start()
    # The session's redis-server keeps no data, so the topic is made anew; the broker must serve it.
    deadline = time.monotonic() + 20
    while True:
        try:
            confluent_produce(
                broker.bootstrap, "outage", [Rec(None, b"after")], **{"message.timeout.ms": 5000}
            )
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert [m.value() for m in confluent_consume(broker.bootstrap, "outage", 1)] == [b"after"]
