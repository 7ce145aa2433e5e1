"""Produce semantics: acks, idempotence with retries, sequence checks, seek by offset and time."""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.produce.v13.request import PartitionProduceData as PartitionProduceDataV13
from kio.schema.produce.v13.request import ProduceRequest as ProduceV13
from kio.schema.produce.v13.request import TopicProduceData as TopicProduceDataV13

from schooner.protocol.records import BatchBuilder
from tests.clients import Rec, confluent_consume, confluent_produce, kafka_python_produce
from tests.proxy import DroppingProxy
from tests.wire import call, connect, decode_response, encode_request, read_frame

pytestmark = pytest.mark.both_encodings


def _recent_ms() -> int:
    """A timestamp base an hour ago: recent enough that the default retention keeps the records
    (a dense topic applies retention.ms to record timestamps, as Kafka does)."""
    return int(time.time() * 1000) - 3_600_000


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker, acks: str) -> None:
    records = [Rec(b"k", b"v%d" % i) for i in range(50)]
    confluent_produce(broker.bootstrap, f"acks-{acks}", records, acks=acks)
    got = confluent_consume(broker.bootstrap, f"acks-{acks}", 50)
    assert [m.value() for m in got] == [r.value for r in records]


def test_kafka_python_acks_zero(broker) -> None:
    kafka_python_produce(broker.bootstrap, "kp-acks0", [Rec(None, b"a"), Rec(None, b"b")], acks=0)
    assert [m.value() for m in confluent_consume(broker.bootstrap, "kp-acks0", 2)] == [b"a", b"b"]


def test_idempotent_producer_retry_after_dropped_response_writes_once(broker_factory) -> None:
    # The broker advertises the proxy, so every connection the client makes goes through it.
    proxy = DroppingProxy(0, drop_api_key=0, drops=2)
    try:
        b = broker_factory(advertise=f"127.0.0.1:{proxy.port}")
        proxy.target_port = b.port
        producer = Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{proxy.port}",
                "enable.idempotence": True,
                "linger.ms": 20,
                "retry.backoff.ms": 50,
                "message.timeout.ms": 20000,
            }
        )
        errors: list[object] = []
        for i in range(200):
            producer.produce(
                "idem", value=b"%d" % i, on_delivery=lambda e, m: errors.append(e) if e else None
            )
            if i % 50 == 0:
                producer.flush(20)
        assert producer.flush(30) == 0
        assert not errors
        assert proxy.dropped == 2
        got = confluent_consume(b.bootstrap, "idem", 200, timeout=10)
        assert [m.value() for m in got] == [b"%d" % i for i in range(200)]
        time.sleep(0.5)
        assert len(confluent_consume(b.bootstrap, "idem", 201, timeout=2)) == 200
    finally:
        proxy.close()


def test_seek_to_offset_and_timestamp(broker) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    base = _recent_ms()
    for i in range(30):
        producer.produce("seek", value=b"%d" % i, timestamp=base + i * 1000)
        producer.flush(10)  # one batch per record: timestamp-encoded offsets have gaps between them
    delivered = confluent_consume(broker.bootstrap, "seek", 30)
    offsets = [m.offset() for m in delivered]
    assert len(offsets) == 30

    middle = offsets[17]
    got = confluent_consume(broker.bootstrap, "seek", 3, offset=middle)
    assert [m.value() for m in got] == [b"17", b"18", b"19"]

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"})
    try:
        found = consumer.offsets_for_times([TopicPartition("seek", 0, base + 9500)], timeout=10)
        assert found[0].offset == offsets[10]
        exact = consumer.offsets_for_times([TopicPartition("seek", 0, base + 5000)], timeout=10)
        assert exact[0].offset == offsets[5]
        beyond = consumer.offsets_for_times([TopicPartition("seek", 0, base + 10**9)], timeout=10)
        assert beyond[0].offset == -1
        low, high = consumer.get_watermark_offsets(TopicPartition("seek", 0), timeout=10)
        assert low == offsets[0] and high == offsets[-1] + 1
    finally:
        consumer.close()


def test_out_of_order_timestamps_are_found_by_kafkas_rule(broker) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    base = _recent_ms()
    stamps = [5000, 1000, 9000, 2000, 12000]
    for ts in stamps:
        producer.produce("backfill", value=str(ts).encode(), timestamp=base + ts)
        producer.flush(10)
    offsets = [m.offset() for m in confluent_consume(broker.bootstrap, "backfill", 5)]
    assert len(offsets) == 5
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"})
    try:
        for target, expected_index in [(0, 0), (5000, 0), (6000, 2), (9000, 2), (9001, 4)]:
            where = TopicPartition("backfill", 0, base + target)
            found = consumer.offsets_for_times([where], timeout=10)
            assert found[0].offset == offsets[expected_index], target
    finally:
        consumer.close()


def test_kafka_python_offsets_for_times_and_max_timestamp(broker) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    base = _recent_ms()
    for ts in (3000, 8000, 4000):
        producer.produce("kp-times", value=b"x", timestamp=base + ts)
        producer.flush(10)
    offsets = [m.offset() for m in confluent_consume(broker.bootstrap, "kp-times", 3)]
    assert len(offsets) == 3
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        tp = KTP("kp-times", 0)
        found = consumer.offsets_for_times({tp: base + 3500})[tp]
        assert found.offset == offsets[1] and found.timestamp == base + 8000
        assert consumer.beginning_offsets([tp])[tp] == offsets[0]
        assert consumer.end_offsets([tp])[tp] == offsets[2] + 1
    finally:
        consumer.close()


def _produce_v13(topic_id: uuid.UUID, acks: int, value: bytes) -> ProduceV13:
    b = BatchBuilder(0, 0)
    b.append(0, int(time.time() * 1000), None, value, [])
    partition = PartitionProduceDataV13(index=0, records=b.build())
    return ProduceV13(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(TopicProduceDataV13(topic_id=topic_id, partition_data=(partition,)),),
    )


def test_produce_v13_names_the_topic_by_id_and_acks_zero_sends_no_frame(broker) -> None:
    """v13 topics have no name (the sequencer key used to read it and fail); acks=0 gets nothing back,
    so the next frame on the connection answers the next request."""
    confluent_produce(broker.bootstrap, "v13", [Rec(None, b"first")])
    topic_id = broker.call(broker.broker.ctx.topics.load("v13")).id
    produced = call(broker.port, _produce_v13(topic_id, 1, b"by id"))
    partition = produced.responses[0].partition_responses[0]
    assert partition.error_code == ErrorCode.none and partition.base_offset > 0
    assert produced.responses[0].topic_id == topic_id
    with connect(broker.port) as sock:
        sock.sendall(encode_request(_produce_v13(topic_id, 0, b"no reply"), correlation_id=1))
        sock.sendall(encode_request(_produce_v13(topic_id, 1, b"reply"), correlation_id=2))
        frame = read_frame(sock)
        assert frame is not None
        correlation_id, answer = decode_response(frame, 0, 13, flexible_header=True)
    later = answer.responses[0].partition_responses[0]
    assert correlation_id == 2 and later.error_code == ErrorCode.none
    assert later.base_offset > partition.base_offset
    got = confluent_consume(broker.bootstrap, "v13", 4)
    assert [m.value() for m in got] == [b"first", b"by id", b"no reply", b"reply"]
