"""Produce v0-v2 (protocol/legacy_produce) and legacy message sets (protocol/legacy_records), checked
against kafka-python's independent encoders and decoders and against layouts written out by hand."""

from __future__ import annotations

import contextlib
import datetime
import gzip
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.producer import ProduceRequest as KafkaPythonProduce
from kafka.protocol.producer import ProduceResponse as KafkaPythonResponse
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type, response_type
from schooner.protocol.legacy_records import read_message_set
from schooner.protocol.messages import RequestHeader, decode_request, encode_response, make, sibling
from schooner.protocol.records import (
    CORRUPT_MESSAGE,
    UNSUPPORTED_FOR_MESSAGE_FORMAT,
    InvalidRecords,
    read_batches,
)
from tests.wire import record_batch

NOW = 1_800_000_000_000
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}


def test_produce_is_advertised_from_v0() -> None:
    assert SUPPORTED_VERSIONS[ApiKey.PRODUCE] == (0, 13)


def _header(version: int, correlation: int = 9, client: bytes = b"c") -> bytes:
    return struct.pack(">hhih", 0, version, correlation, len(client)) + client


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_request_written_out_by_hand_decodes(version: int) -> None:
    # acks, timeout, [topic: name, [partition: index, records]]
    body = struct.pack(">hii", -1, 1500, 1) + struct.pack(">h", 6) + b"orders" + struct.pack(">i", 2)
    body += struct.pack(">ii", 0, 3) + b"abc" + struct.pack(">ii", 4, -1)
    request = decode_request(_header(version) + body)
    assert type(request.body) is request_type(0, version)
    assert request.body.__version__ == version
    assert request.body.acks == -1 and request.body.timeout == datetime.timedelta(milliseconds=1500)
    [topic] = request.body.topic_data
    assert topic.name == "orders"
    assert [(p.index, p.records) for p in topic.partition_data] == [(0, b"abc"), (4, None)]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_request_kafka_python_encodes_decodes(version: int) -> None:
    topic = KafkaPythonProduce.TopicProduceData
    request = KafkaPythonProduce(
        transactional_id=None,
        acks=1,
        timeout_ms=30000,
        topic_data=[topic(name="t", partition_data=[topic.PartitionProduceData(index=2, records=b"xyz")])],
    )
    decoded = decode_request(_header(version) + request.encode(version=version)).body
    assert (decoded.acks, decoded.timeout) == (1, datetime.timedelta(seconds=30))
    assert [(t.name, [(p.index, p.records) for p in t.partition_data]) for t in decoded.topic_data] == [
        ("t", [(2, b"xyz")])
    ]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_responses_read_back_in_kafka_python(version: int) -> None:
    cls = response_type(0, version)
    appended = datetime.datetime.fromtimestamp(NOW / 1000, tz=datetime.UTC)
    partition = make(
        sibling(cls, "PartitionProduceResponse"),
        index=3,
        error_code=ErrorCode.not_leader_or_follower,
        base_offset=1234,
        log_append_time=appended,
        log_start_offset=7,  # later versions only: dropped here
    )
    topic = make(sibling(cls, "TopicProduceResponse"), name="orders", partition_responses=(partition,))
    response = make(cls, responses=(topic,), throttle_time=datetime.timedelta(milliseconds=25))
    frame = encode_response(RequestHeader(0, version, 77, None), response)
    size, correlation = struct.unpack_from(">ii", frame)
    assert size == len(frame) - 4 and correlation == 77
    decoded = KafkaPythonResponse.decode(frame[8:], version=version)
    [t] = decoded.responses
    [p] = t.partition_responses
    assert (t.name, p.index, p.error_code, p.base_offset) == ("orders", 3, 6, 1234)
    expected_size = 4 + 2 + 6 + 4 + 4 + 2 + 8  # [topic name [index error offset]]
    if version >= 1:
        assert decoded.throttle_time_ms == 25
        expected_size += 4
    if version >= 2:
        assert p.log_append_time_ms == NOW
        expected_size += 8
    assert len(frame) - 8 == expected_size


def _message_set(magic: int, codec: str, records: list[tuple[int, bytes | None, bytes | None]]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=CODECS[codec], batch_size=1 << 20)
    for offset, (timestamp, key, value) in enumerate(records):
        builder.append(offset, timestamp=timestamp if magic else None, key=key, value=value)
    return bytes(builder.build())


RECORDS = [(NOW - 5, b"k0", b"v0"), (NOW - 4, None, b""), (NOW - 3, b"", None), (NOW - 2, b"k3", b"x" * 300)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_magic_1_message_sets_keep_keys_values_and_timestamps(codec: str) -> None:
    data = _message_set(1, codec, RECORDS)
    [batch] = read_message_set(data, received_ms=NOW)
    assert [(r.timestamp, r.key, r.value, r.headers) for r in batch.records] == [(*r, []) for r in RECORDS]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.size_bytes == len(data)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy"])
def test_magic_0_records_get_the_time_they_were_received(codec: str) -> None:
    [batch] = read_message_set(_message_set(0, codec, RECORDS), received_ms=NOW)
    assert [(r.timestamp, r.key, r.value) for r in batch.records] == [(NOW, k, v) for _, k, v in RECORDS]


def test_a_magic_1_record_without_a_timestamp_gets_the_time_it_was_received() -> None:
    [batch] = read_message_set(_message_set(1, "none", [(-1, b"k", b"v")]), received_ms=NOW)
    assert [r.timestamp for r in batch.records] == [NOW]


def test_several_messages_and_wrappers_make_one_batch_limited_by_its_largest_message() -> None:
    plain = _message_set(1, "none", RECORDS[:2])
    wrapper = _message_set(1, "gzip", RECORDS[2:])
    old = _message_set(0, "none", RECORDS[:1])
    [batch] = read_message_set(plain + wrapper + old, received_ms=NOW)
    assert [r.key for r in batch.records] == [b"k0", None, b"", b"k3", b"k0"]
    first_message = 12 + struct.unpack_from(">i", plain, 8)[0]
    assert batch.largest_message_bytes == max(first_message, len(wrapper)) < batch.size_bytes
    assert batch.checked_bytes == batch.largest_message_bytes
    # A v2 batch is limited as a whole.
    [v2] = read_batches(record_batch([b"a", b"b"]))
    assert v2.checked_bytes == v2.size_bytes


def test_an_empty_set_has_no_batch() -> None:
    assert read_message_set(b"", received_ms=NOW) == []


@pytest.mark.parametrize(
    ("mangle", "code"),
    [
        (lambda data: data[:-1], CORRUPT_MESSAGE),  # truncated
        (lambda data: data[:10], CORRUPT_MESSAGE),  # truncated header
        (lambda data: data[:16] + bytes([data[16] ^ 1]) + data[17:], CORRUPT_MESSAGE),  # magic 0: CRC
        (lambda data: data[:30] + bytes([data[30] ^ 0xFF]) + data[31:], CORRUPT_MESSAGE),  # CRC
        (lambda data: data[:12] + b"\x00\x00\x00\x00" + data[16:], CORRUPT_MESSAGE),  # zeroed CRC
        (lambda data: data[:8] + struct.pack(">i", 3) + data[12:], CORRUPT_MESSAGE),  # size below a message
        (lambda data: record_batch([b"v2 batch"]), UNSUPPORTED_FOR_MESSAGE_FORMAT),
    ],
)
def test_broken_message_sets_are_refused_with_kafka_codes(mangle, code: int) -> None:  # type: ignore[no-untyped-def]
    data = _message_set(1, "none", RECORDS[:1])
    with pytest.raises(InvalidRecords) as raised:
        read_message_set(mangle(data), received_ms=NOW)
    assert raised.value.error_code == code


def _message(magic: int, attributes: int, value: bytes) -> bytes:
    """One message with a correct CRC, written out by hand: offset, size, crc, magic, attributes,
    [timestamp], key (null), value."""
    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", NOW) if magic else b"")
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def test_a_message_written_out_by_hand_reads() -> None:
    [batch] = read_message_set(_message(1, 0, b"hello") + _message(0, 0, b"old"), received_ms=NOW + 1)
    assert [(r.timestamp, r.key, r.value) for r in batch.records] == [
        (NOW, None, b"hello"),
        (NOW + 1, None, b"old"),
    ]


@pytest.mark.parametrize("attributes", [1, 2, 3, 7])  # gzip, snappy, lz4 of garbage; no such codec
def test_a_wrapper_that_does_not_decompress_is_corrupt(attributes: int) -> None:
    with pytest.raises(InvalidRecords) as raised:
        read_message_set(_message(1, attributes, b"not compressed at all"), received_ms=NOW)
    assert raised.value.error_code == CORRUPT_MESSAGE


def test_a_wrapper_holding_a_wrapper_is_corrupt() -> None:
    inner = _message_set(1, "gzip", RECORDS)
    with pytest.raises(InvalidRecords) as raised:
        read_message_set(_message(1, 1, gzip.compress(inner)), received_ms=NOW)
    assert raised.value.error_code == CORRUPT_MESSAGE


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    data=st.data(),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(["none", "gzip", "snappy", "lz4"]),
    fix_crc=st.booleans(),
)
def test_mutated_message_sets_raise_only_invalid_records(
    data: st.DataObject, magic: int, codec: str, fix_crc: bool
) -> None:
    """Bytes flipped anywhere, the set cut short; with fix_crc the first message's CRC is made right
    again, so the flips reach the decompressor and the inner message set."""
    if magic == 0 and codec == "lz4":
        codec = "gzip"  # magic 0 has no lz4
    raw = bytearray(_message_set(magic, codec, RECORDS))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    if fix_crc:
        size = struct.unpack_from(">i", raw, 8)[0]
        if 5 <= size <= len(raw) - 12:
            struct.pack_into(">I", raw, 12, zlib.crc32(raw[16 : 12 + size]))
    cut = data.draw(st.integers(0, len(raw)))
    with contextlib.suppress(InvalidRecords):
        read_message_set(bytes(raw[:cut]), received_ms=NOW)
