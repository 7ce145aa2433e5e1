"""Compression end to end (compression.type=producer, the default): a consumer gets each batch
compressed with the codec its producer used, as from Kafka, though Schooner stores one entry per
record (storage keeps the codec runs; fetch_codec.py compresses again)."""

from __future__ import annotations

import time

import pytest
from aiokafka.record._crecords import DefaultRecordBatch, DefaultRecordBatchBuilder
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.protocol.records import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from schooner.storage.keys import Keyspace
from tests.clients import CLIENTS, Rec, confluent_produce, consume_with
from tests.wire import call, create_topics, fetch_request, produce_request

CODECS = {"gzip": CODEC_GZIP, "snappy": CODEC_SNAPPY, "lz4": CODEC_LZ4, "zstd": CODEC_ZSTD}
JSON = b'{"user": %d, "event": "page_view", "path": "/products/item", "referrer": "search"}'


def _batch(codec: int, values: list[bytes]) -> bytes:
    """One batch as a producer compresses it."""
    builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 2**31 - 1)
    stamp = int(time.time() * 1000)
    for i, value in enumerate(values):
        builder.append(i, stamp, None, value, [])
    return bytes(builder.build())


def _fetched(port: int, topic: str, offset: int) -> list[DefaultRecordBatch]:
    """Every batch from the offset to the high watermark, fetch after fetch."""
    batches: list[DefaultRecordBatch] = []
    while True:
        answer = call(port, fetch_request(topic, offset)).responses[0].partitions[0]
        data, pos = answer.records or b"", 0
        while pos < len(data):
            size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
            batches.append(DefaultRecordBatch(data[pos : pos + size]))
            pos += size
        if batches:
            offset = batches[-1].next_offset
        if offset >= answer.high_watermark:
            return batches


def _values(batches: list[DefaultRecordBatch]) -> list[bytes | None]:
    return [r.value for b in batches for r in b]


@pytest.mark.parametrize("name", list(CODECS))
def test_a_consumer_gets_the_producers_codec(broker, name: str) -> None:
    topic = f"e2e-{name}"
    records = [Rec(None, JSON % i) for i in range(500)]
    confluent_produce(broker.bootstrap, topic, records, **{"compression.type": name, "linger.ms": 50})
    batches = _fetched(broker.port, topic, 0)
    assert {b.compression_type for b in batches} == {CODECS[name]}
    assert all(b.validate_crc() for b in batches)
    assert _values(batches) == [r.value for r in records]
    for client in CLIENTS:
        assert consume_with(client, broker.bootstrap, topic, len(records)) == records


def test_each_run_of_batches_keeps_its_own_codec(broker, redis_client, keyspace) -> None:
    topic = "e2e-mixed"
    create_topics(broker.port, topic)
    sent = [
        (CODEC_LZ4, [JSON % i for i in range(0, 40)]),
        (CODEC_NONE, [JSON % i for i in range(40, 50)]),
        (CODEC_ZSTD, [JSON % i for i in range(50, 80)]),
        (CODEC_ZSTD, [JSON % i for i in range(80, 100)]),
        (CODEC_GZIP, [JSON % i for i in range(100, 130)]),
    ]
    for codec, values in sent:
        answer = call(broker.port, produce_request(topic, _batch(codec, values)))
        assert answer.responses[0].partition_responses[0].error_code == 0
    batches = _fetched(broker.port, topic, 0)
    runs = [(b.base_offset, b.compression_type) for b in batches]
    assert runs == [(0, CODEC_LZ4), (40, CODEC_NONE), (50, CODEC_ZSTD), (100, CODEC_GZIP)]
    assert _values(batches) == [v for _, values in sent for v in values]
    # From inside a run: that run's codec from the first record on.
    assert [(b.base_offset, b.compression_type) for b in _fetched(broker.port, topic, 60)] == [
        (60, CODEC_ZSTD),
        (100, CODEC_GZIP),
    ]
    # Storage keeps an entry only where the codec changes.
    stream = Keyspace(keyspace).codec_runs(topic, 0)
    kept = [(i, f[b"codec"]) for i, f in redis_client.xrange(stream)]
    assert kept == [(b"0-1", b"3"), (b"0-41", b"0"), (b"0-51", b"4"), (b"0-101", b"1")]


def test_runs_below_the_log_start_go(broker, redis_client, keyspace) -> None:
    topic = "e2e-trimmed"
    create_topics(broker.port, topic)
    for codec, values in [(CODEC_LZ4, [b"a"] * 10), (CODEC_NONE, [b"b"] * 10)]:
        call(broker.port, produce_request(topic, _batch(codec, values)))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    deleted = admin.delete_records([TopicPartition(topic, 0, 15)], request_timeout=10)
    deleted[TopicPartition(topic, 0, 15)].result(10)
    call(broker.port, produce_request(topic, _batch(CODEC_SNAPPY, [JSON % i for i in range(20)])))
    stream = Keyspace(keyspace).codec_runs(topic, 0)
    assert [i for i, _ in redis_client.xrange(stream)] == [b"0-11", b"0-21"]  # lz4's run is gone
    batches = _fetched(broker.port, topic, 15)
    assert [(b.base_offset, b.compression_type) for b in batches] == [(15, CODEC_NONE), (20, CODEC_SNAPPY)]


def test_a_topic_set_to_uncompressed_sends_no_codec(broker) -> None:
    topic = "e2e-plain"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    config = {"compression.type": "uncompressed"}
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(10)
    call(broker.port, produce_request(topic, _batch(CODEC_ZSTD, [JSON % i for i in range(50)])))
    batches = _fetched(broker.port, topic, 0)
    assert {b.compression_type for b in batches} == {CODEC_NONE}
    assert _values(batches) == [JSON % i for i in range(50)]
