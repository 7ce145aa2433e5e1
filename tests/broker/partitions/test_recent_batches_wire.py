"""A fetch served from the batches this broker just appended (broker/partitions/recent_batches.py)
answers with the records, offsets and marks of one read from Redis, which another broker on the same Redis
does. (The
batches may be cut differently: served ones are as produced, read ones as the encoder joins them.)"""

from __future__ import annotations

import time

from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.schema.errors import ErrorCode

from tests.wire import call, create_topics, fetch_request, produce_request, record_batch


def _batch(keys: bool, count: int, first_timestamp: int, sequence: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, 0, 9, 0, sequence, 2**31 - 1)  # an idempotent producer's
    for i in range(count):
        key = b"k%d" % i if keys else None
        builder.append(i, first_timestamp + i // 2, key, b"value %d" % i, [])
    return bytes(builder.build())


def _fetch(port: int, topic: str, offset: int) -> tuple[int, int, int, list[tuple[object, ...]]]:
    answer = call(port, fetch_request(topic, offset)).responses[0].partitions[0]
    batches = MemoryRecords(answer.records or b"")
    records = []
    while (batch := batches.next_batch()) is not None:
        assert batch.validate_crc() and batch.producer_id == -1 and not batch.is_transactional
        records += [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    return answer.error_code, answer.high_watermark, answer.last_stable_offset, records


def test_a_fetch_of_just_appended_batches_answers_as_a_read_from_redis(broker_factory) -> None:
    appender = broker_factory()
    reader = broker_factory()  # the same Redis and keyspace, and no batches of its own kept
    create_topics(appender.port, "kept")
    now = int(time.time() * 1000)
    produced = [_batch(True, 5, now, 0), _batch(False, 3, now + 10, 5), _batch(True, 1, now + 20, 8)]
    offset = 0
    for data in produced:
        response = call(appender.port, produce_request("kept", data))
        answer = response.responses[0].partition_responses[0]
        assert (ErrorCode(answer.error_code), answer.base_offset) == (ErrorCode.none, offset)
        offset += _count(data)
    for start in (0, 5, 8):
        served = _fetch(appender.port, "kept", start)
        read = _fetch(reader.port, "kept", start)
        assert served[0] == 0 and [r[0] for r in served[3]] == list(range(start, 9))
        assert served == read, start


def _count(data: bytes) -> int:
    return int.from_bytes(data[57:61], "big")


def test_a_just_appended_batch_larger_than_the_fetch_is_cut_to_its_max_bytes(broker_factory) -> None:
    """Served whole, a producer's large batch went past the fetch's max bytes (and past a consumer quota's
    window, which then throttled every fetch of it empty)."""
    broker = broker_factory()
    create_topics(broker.port, "big")
    values = [b"v%03d" % i + b"x" * 996 for i in range(64)]  # one batch of 64 KB
    response = call(broker.port, produce_request("big", record_batch(values)))
    assert response.responses[0].partition_responses[0].error_code == 0
    for max_bytes in (16_384, 10):  # the second below one record: that one record (KIP-74)
        answer = call(broker.port, fetch_request("big", 0, max_bytes=max_bytes)).responses[0].partitions[0]
        records = answer.records or b""
        assert 0 < len(records) <= max(max_bytes, 1_200), (max_bytes, len(records))
        batches = MemoryRecords(records)
        got = []
        while (batch := batches.next_batch()) is not None:
            got += [(r.offset, r.value) for r in batch]
        assert got == [(i, values[i]) for i in range(len(got))] and got, max_bytes
