"""Produce v0-v2 end to end: old clients' message sets (magic 0 and 1) land in the log and confluent-kafka
reads them back with their keys, values and timestamps."""

from __future__ import annotations

import datetime
import struct
import subprocess
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v1.request import MetadataRequest, MetadataRequestTopic

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from tests.clients import confluent_consume
from tests.proxy import DroppingProxy
from tests.wire import call, connect, decode_response, encode_request, read_frame, record_batch

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}


def _topic(admin_bootstrap: str, **config: str) -> str:
    name = f"legacy-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": admin_bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=config)])[name].result(10)
    return name


def _now_ms() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize(
    ("api_version", "produce_version", "codec"),
    [
        ((0, 10), 2, "none"),
        ((0, 10), 2, "gzip"),
        ((0, 10), 2, "snappy"),
        ((0, 10), 2, "lz4"),
        ((0, 9), 1, "none"),
        ((0, 9), 1, "gzip"),
        ((0, 9), 1, "snappy"),
        ((0, 8, 2), 0, "none"),
        ((0, 8, 2), 0, "gzip"),
    ],
)
def test_kafka_python_with_an_old_api_version_produces_for_confluent_kafka(
    broker_factory: Any, api_version: tuple[int, ...], produce_version: int, codec: str
) -> None:
    proxy = DroppingProxy(0, drop_api_key=-1, drops=0)  # records the versions the client sends
    try:
        broker = broker_factory(advertise=f"127.0.0.1:{proxy.port}")
        proxy.target_port = broker.port
        topic = _topic(broker.bootstrap)
        producer = KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{proxy.port}",
            api_version=api_version,
            compression_type=None if codec == "none" else codec,
            linger_ms=20,
        )
        sent_at = _now_ms() - 60_000  # recent: a dense topic's retention goes by record time
        before = _now_ms()
        futures = [
            producer.send(
                topic, key=b"k%d" % i if i != 2 else None, value=b"v%d" % i, timestamp_ms=sent_at + i
            )
            for i in range(6)
        ]
        producer.flush(10)
        metadata = [f.get(10) for f in futures]
        producer.close(5)
        after = _now_ms()
        assert {v for key, v in proxy.requests if key == ApiKey.PRODUCE} == {produce_version}
        got = confluent_consume(broker.bootstrap, topic, 6)  # the broker advertises the proxy: keep it up
    finally:
        proxy.close()
    assert [(m.key(), m.value()) for m in got] == [
        (b"k%d" % i if i != 2 else None, b"v%d" % i) for i in range(6)
    ]
    assert [m.offset() for m in got] == [md.offset for md in metadata]
    assert len({m.offset() for m in got}) == 6
    stamps = [m.timestamp() for m in got]
    assert all(kind == TIMESTAMP_CREATE_TIME for kind, _ in stamps)
    if produce_version == 2:  # magic 1: the producer's timestamps
        assert [ts for _, ts in stamps] == [sent_at + i for i in range(6)]
    else:  # magic 0 has none: the time the broker received the batch
        assert all(before <= ts <= after for _, ts in stamps), (before, stamps, after)


def _message_set(magic: int, records: list[tuple[bytes | None, bytes]], codec: str = "none") -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=CODECS[codec], batch_size=1 << 20)
    stamp = _now_ms() - 60_000  # recent: a dense topic's retention goes by record time
    for offset, (key, value) in enumerate(records):
        builder.append(offset, timestamp=stamp + offset if magic else None, key=key, value=value)
    return bytes(builder.build())


def _produce(version: int, topic: str, records: bytes, acks: int = 1, partition: int = 0) -> Any:
    cls = request_type(ApiKey.PRODUCE, version)
    data = make(sibling(cls, "PartitionProduceData"), index=partition, records=records)
    return make(
        cls,
        acks=acks,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(make(sibling(cls, "TopicProduceData"), name=topic, partition_data=(data,)),),
    )


@pytest.mark.parametrize("version", [0, 1, 2])
def test_raw_produce_answers_in_each_version_layout(broker: Any, version: int) -> None:
    create_time = _topic(broker.bootstrap)
    append_time = _topic(broker.bootstrap, **{"message.timestamp.type": "LogAppendTime"})
    magic = 0 if version < 2 else 1
    for topic in (create_time, append_time):
        before = _now_ms()
        response = call(
            broker.port, _produce(version, topic, _message_set(magic, [(b"a", b"1"), (b"b", b"2")]))
        )
        after = _now_ms()
        [t] = response.responses
        [p] = t.partition_responses
        assert (t.name, p.index, p.error_code) == (topic, 0, ErrorCode.none)
        assert p.base_offset >= 0
        assert hasattr(response, "throttle_time") == (version >= 1)
        if version >= 2:
            if topic == append_time:
                assert p.log_append_time is not None
                assert before <= p.log_append_time.timestamp() * 1000 <= after + 1
            else:
                assert p.log_append_time is None  # -1 on the wire: CreateTime
        got = confluent_consume(broker.bootstrap, topic, 2)
        assert [(m.key(), m.value(), m.offset()) for m in got] == [
            (b"a", b"1", p.base_offset),
            (b"b", b"2", p.base_offset + 1),
        ]
        if topic == append_time:
            assert all(before <= m.timestamp()[1] <= after for m in got)


def test_acks_0_gets_no_response_and_the_connection_keeps_serving(broker: Any) -> None:
    topic = _topic(broker.bootstrap)
    with connect(broker.port) as sock:
        sock.sendall(encode_request(_produce(0, topic, _message_set(0, [(b"k", b"v")]), acks=0), 1))
        metadata = MetadataRequest(topics=(MetadataRequestTopic(name=topic),))
        sock.sendall(encode_request(metadata, 2))
        frame = read_frame(sock)
        assert frame is not None
        correlation, response = decode_response(frame, ApiKey.METADATA, 1, False)
    assert correlation == 2 and [t.name for t in response.topics] == [topic]
    [m] = confluent_consume(broker.bootstrap, topic, 1)
    assert (m.key(), m.value()) == (b"k", b"v")


def test_max_message_bytes_limits_each_message_of_a_set(broker: Any) -> None:
    topic = _topic(broker.bootstrap, **{"max.message.bytes": "300"})
    small = [(b"k%d" % i, b"x" * 150) for i in range(3)]  # each message fits, the set does not
    response = call(broker.port, _produce(1, topic, _message_set(0, small)))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none
    response = call(broker.port, _produce(1, topic, _message_set(0, [(b"big", b"x" * 400)])))
    [p] = response.responses[0].partition_responses
    assert p.error_code == ErrorCode.message_too_large
    assert [m.value() for m in confluent_consume(broker.bootstrap, topic, 3)] == [b"x" * 150] * 3


def test_each_version_takes_only_its_record_format(broker: Any) -> None:
    topic = _topic(broker.bootstrap)
    response = call(broker.port, _produce(2, topic, record_batch([b"v2 batch in a v2 request"])))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.unsupported_for_message_format
    response = call(broker.port, _produce(3, topic, _message_set(1, [(b"k", b"v")])))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.unsupported_for_message_format
    corrupt = bytearray(_message_set(1, [(b"k", b"v")]))
    corrupt[-1] ^= 0xFF
    response = call(broker.port, _produce(1, topic, bytes(corrupt)))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.corrupt_message
    response = call(broker.port, _produce(0, topic, b""))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.invalid_record


def test_a_truncated_v0_request_closes_only_its_connection(broker: Any) -> None:
    topic = _topic(broker.bootstrap)
    frame = encode_request(_produce(0, topic, _message_set(0, [(b"k", b"v")])))
    cut = frame[4:-6]
    with connect(broker.port) as sock:
        sock.sendall(struct.pack(">i", len(cut)) + cut)
        assert read_frame(sock) is None
    response = call(broker.port, _produce(0, topic, _message_set(0, [(b"k", b"v")])))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_older_librdkafka_compresses_now_that_produce_v0_is_advertised(broker: Any, codec: str) -> None:
    # librdkafka before the fix of KAFKA-18659's client side (kcat here has 2.0.2) enables gzip, snappy
    # and lz4 only when the broker's Produce range includes v0; otherwise it logs "Broker does not
    # support compression type" and sends the batch uncompressed.
    topic = _topic(broker.bootstrap)
    done = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-P", "-t", topic, "-z", codec, "-d", "msg"],
        input=b"a" * 1000 + b"\n",
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr.decode()
    log = [line for line in done.stderr.decode().splitlines() if "Produce MessageSet" in line]
    assert log and all(line.endswith(f", {codec})") for line in log), log
    [m] = confluent_consume(broker.bootstrap, topic, 1)
    assert m.value() == b"a" * 1000
