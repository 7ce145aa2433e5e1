"""Fetch: offsets inside a batch, int32 offset deltas, long polls, max_bytes, topic ids."""

from __future__ import annotations

import datetime
import threading
import time

import pytest
import redis
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v13.request import FetchPartition as FetchPartition13
from kio.schema.fetch.v13.request import FetchRequest as FetchRequest13
from kio.schema.fetch.v13.request import FetchTopic as FetchTopic13

from schooner.storage.keys import Keyspace
from schooner.storage.offsets import timestamp_offsets
from tests.clients import Rec, confluent_consume, confluent_produce, kafka_python_consume
from tests.wire import call, fetch_request

# Each test that takes the broker's default encoding runs on both (see tests/conftest.py).
both_encodings = pytest.mark.both_encodings


@both_encodings
def test_fetch_from_an_offset_inside_a_batch(broker) -> None:
    delivered = confluent_produce(
        broker.bootstrap, "inside", [Rec(None, b"%d" % i) for i in range(10)], **{"linger.ms": 100}
    )
    offsets = [m.offset() for m in delivered]
    assert offsets == list(range(offsets[0], offsets[0] + 10))  # one batch, contiguous
    got = confluent_consume(broker.bootstrap, "inside", 4, offset=offsets[6])
    assert [m.value() for m in got[:4]] == [b"6", b"7", b"8", b"9"]


def test_records_far_apart_are_split_so_offset_deltas_fit_int32(
    broker_factory, redis_client: redis.Redis
) -> None:
    # Offsets far apart happen in the timestamp encoding only, where they are time.
    broker = broker_factory(topic_defaults={"schooner.offset.encoding": "timestamp"})
    confluent_produce(broker.bootstrap, "far", [Rec(None, b"seed")])
    stream = Keyspace(broker.settings.keyspace).stream("far", 0)
    last_ms = int(redis_client.xrevrange(stream, count=1)[0][0].split(b"-")[0])
    # 2**21 ms apart at 10 sequence bits is an offset gap of 2**31: one batch cannot hold both.
    redis_client.xadd(stream, {"value": b"later"}, id=f"{last_ms + 2**21 + 5}-0")
    redis_client.xadd(stream, {"value": b"much later"}, id=f"{last_ms + 2**23}-0")
    got = confluent_consume(broker.bootstrap, "far", 3)
    assert [m.value() for m in got] == [b"seed", b"later", b"much later"]
    assert got[1].offset() == timestamp_offsets(10).offset_of(last_ms + 2**21 + 5, 0)
    assert [m.value for m in kafka_python_consume(broker.bootstrap, "far", 3)] == [
        b"seed",
        b"later",
        b"much later",
    ]


@both_encodings
def test_long_poll_waits_for_data_and_wakes_on_append(broker) -> None:
    delivered = confluent_produce(broker.bootstrap, "poll", [Rec(None, b"first")])
    end = delivered[0].offset() + 1
    start = time.monotonic()
    empty = call(broker.port, fetch_request("poll", end, max_wait_ms=700))
    waited = time.monotonic() - start
    assert empty.responses[0].partitions[0].records in (b"", None)
    assert waited >= 0.6
    threading.Timer(0.3, lambda: confluent_produce(broker.bootstrap, "poll", [Rec(None, b"second")])).start()
    start = time.monotonic()
    woken = call(broker.port, fetch_request("poll", end, max_wait_ms=20000))
    assert woken.responses[0].partitions[0].records
    assert time.monotonic() - start < 10


@both_encodings
def test_first_batch_is_returned_even_when_larger_than_max_bytes(broker) -> None:
    delivered = confluent_produce(broker.bootstrap, "kip74", [Rec(None, b"x" * 50_000)])
    response = call(broker.port, fetch_request("kip74", delivered[0].offset(), max_bytes=1000))
    part = response.responses[0].partitions[0]
    assert part.error_code == ErrorCode.none and len(part.records) > 50_000


@both_encodings
def test_out_of_range_and_unknown(broker) -> None:
    delivered = confluent_produce(broker.bootstrap, "range", [Rec(None, b"x")])
    high = delivered[0].offset() + 1
    assert (
        call(broker.port, fetch_request("range", high + 10)).responses[0].partitions[0].error_code
        == ErrorCode.offset_out_of_range
    )
    assert (
        call(broker.port, fetch_request("range", high)).responses[0].partitions[0].error_code
        == ErrorCode.none
    )
    assert (
        call(broker.port, fetch_request("nope", 0)).responses[0].partitions[0].error_code
        == ErrorCode.unknown_topic_or_partition
    )


@both_encodings
def test_fetch_by_topic_id(broker) -> None:
    import uuid

    confluent_produce(broker.bootstrap, "byid", [Rec(None, b"x")])
    topic = broker.call(broker.broker.ctx.topics.load("byid"))

    def fetch(topic_id: uuid.UUID) -> object:
        return call(
            broker.port,
            FetchRequest13(
                max_wait=datetime.timedelta(0),
                min_bytes=1,
                topics=(
                    FetchTopic13(
                        topic_id=topic_id,
                        partitions=(
                            FetchPartition13(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),
                        ),
                    ),
                ),
                forgotten_topics_data=(),
            ),
        )

    found = fetch(topic.id).responses[0]
    assert found.topic_id == topic.id and found.partitions[0].records
    assert fetch(uuid.uuid4()).responses[0].partitions[0].error_code == ErrorCode.unknown_topic_id


def test_auto_create_off(broker_factory) -> None:
    from confluent_kafka import Producer

    broker = broker_factory(auto_create_topics=False)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 2000})
    errors: list[object] = []
    producer.produce("absent", value=b"x", on_delivery=lambda e, m: errors.append(e))
    producer.flush(10)
    assert errors and errors[0] is not None
    assert broker.call(broker.broker.ctx.topics.load("absent")) is None


def test_one_fetch_reads_more_partitions_than_the_connection_pool_holds(broker) -> None:
    # Each partition used to take a pooled Redis connection of its own: past the pool's size the last
    # partitions came back KAFKA_STORAGE_ERROR. They are now read in one pipelined round trip.
    from confluent_kafka.admin import AdminClient, NewTopic
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

    partitions = 150
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("wide", partitions, 1)]).values():
        future.result(30)
    confluent_produce(broker.bootstrap, "wide", [Rec(None, b"last")], partition=partitions - 1)
    request = FetchRequest(
        max_wait=datetime.timedelta(0),
        min_bytes=0,
        max_bytes=1 << 20,
        topics=(
            FetchTopic(
                topic="wide",
                partitions=tuple(
                    FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 16)
                    for p in range(partitions)
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    response = call(broker.port, request)
    answered = response.responses[0].partitions
    assert [p.partition_index for p in answered] == list(range(partitions))
    assert {p.error_code for p in answered} == {ErrorCode.none}
    assert answered[-1].high_watermark == 1 and b"last" in answered[-1].records
