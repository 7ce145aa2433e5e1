"""Records survive a round trip through every client pair: keys, nulls, empties, tombstones, headers."""

from __future__ import annotations

import pytest

from tests.clients import (
    CLIENTS,
    SAMPLE,
    Rec,
    aiokafka_produce,
    as_rec,
    confluent_consume,
    confluent_produce,
    kafka_python_consume,
    kafka_python_produce,
)
from tests.clients import consume_with as _consume


def _produce(client: str, bootstrap: str, topic: str, records: list[Rec], **conf: object) -> None:
    if client == "confluent":
        confluent_produce(bootstrap, topic, records, **conf)
    elif client == "kafka-python":
        kafka_python_produce(bootstrap, topic, records, **conf)
    else:
        aiokafka_produce(bootstrap, topic, records, **conf)


def _sendable(client: str, records: list[Rec]) -> list[Rec]:
    """kafka-python cannot send a header with a null value; everything else sends the full sample."""
    if client != "kafka-python":
        return records
    return [Rec(r.key, r.value, tuple(h for h in r.headers if h[1] is not None)) for r in records]


@pytest.mark.parametrize("producer", CLIENTS)
@pytest.mark.parametrize("consumer", CLIENTS)
def test_round_trip_between_clients(broker, producer: str, consumer: str) -> None:
    topic = f"rt-{producer}-{consumer}"
    records = _sendable(producer, SAMPLE)
    _produce(producer, broker.bootstrap, topic, records)
    assert _consume(consumer, broker.bootstrap, topic, len(records)) == records


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_from_confluent(broker, codec: str) -> None:
    records = [Rec(b"k%d" % i, b"value %d " % i * 20) for i in range(500)]
    confluent_produce(broker.bootstrap, f"codec-{codec}", records, **{"compression.type": codec})
    got = confluent_consume(broker.bootstrap, f"codec-{codec}", len(records))
    assert [as_rec(m.key(), m.value(), m.headers()) for m in got] == records


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_from_kafka_python(broker, codec: str) -> None:
    records = [Rec(b"k%d" % i, b"value %d " % i * 20) for i in range(200)]
    kafka_python_produce(broker.bootstrap, f"kp-{codec}", records, compression_type=codec)
    got = kafka_python_consume(broker.bootstrap, f"kp-{codec}", len(records))
    assert [as_rec(m.key, m.value, m.headers) for m in got] == records


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_topic_compression_type_reencodes_on_fetch(broker, codec: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"tc-{codec}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"compression.type": codec})])[topic].result(10)
    records = [Rec(b"k%d" % i, b"x" * 300) for i in range(300)]
    confluent_produce(broker.bootstrap, topic, records)
    for client in CLIENTS:
        assert _consume(client, broker.bootstrap, topic, len(records)) == records


def test_offsets_are_contiguous_within_a_batch_and_increase(broker) -> None:
    delivered = confluent_produce(broker.bootstrap, "contig", [Rec(None, b"%d" % i) for i in range(1000)])
    offsets = [m.offset() for m in delivered]
    assert offsets == sorted(offsets)
    assert len(set(offsets)) == len(offsets)
    consumed = [m.offset() for m in confluent_consume(broker.bootstrap, "contig", 1000)]
    assert consumed == offsets


def test_one_megabyte_record(broker) -> None:
    big = (bytes(range(256)) * 4000)[:1_000_000]  # 1 MB, inside the default max.message.bytes
    confluent_produce(broker.bootstrap, "big", [Rec(b"big", big)], **{"message.max.bytes": 2_000_000})
    got = confluent_consume(broker.bootstrap, "big", 1)
    assert got[0].value() == big
    assert kafka_python_consume(broker.bootstrap, "big", 1)[0].value == big


def test_hundred_partitions(broker) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("wide", 100, 1)])["wide"].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for p in range(100):
        producer.produce("wide", value=b"p%d" % p, partition=p)
    assert producer.flush(30) == 0
    for p in (0, 37, 99):
        got = confluent_consume(broker.bootstrap, "wide", 1, partition=p)
        assert [m.value() for m in got] == [b"p%d" % p]
    meta = admin.list_topics("wide", timeout=10).topics["wide"]
    assert sorted(meta.partitions) == list(range(100))


def test_batch_over_max_message_bytes_is_refused(broker) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 3_000_000})
    errors: list[object] = []
    producer.produce("too-big", value=b"x" * 1_100_000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert errors and errors[0] is not None and errors[0].code() == 10  # MESSAGE_TOO_LARGE
