"""Bad input gets a Kafka error or a closed connection; the broker keeps serving and data stays intact."""

from __future__ import annotations

import struct

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from tests.clients import Rec, confluent_consume, confluent_produce
from tests.wire import call, connect, encode_request, is_closed, produce_request, read_frame, record_batch


@pytest.fixture
def seeded(broker):
    records = [Rec(b"k%d" % i, b"v%d" % i) for i in range(20)]
    confluent_produce(broker.bootstrap, "keep", records)
    return broker, records


def _still_serving(broker, records) -> None:
    got = confluent_consume(broker.bootstrap, "keep", len(records))
    assert [(m.key(), m.value()) for m in got] == [(r.key, r.value) for r in records]


@pytest.mark.parametrize(
    "payload",
    [
        b"\x00\x00\x00\x05hello",  # a frame of garbage
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # another protocol: a huge size prefix
        struct.pack(">i", -7),  # negative size
        struct.pack(">i", 8) + struct.pack(">hhi", 999, 0, 1),  # unknown API key
        struct.pack(">i", 10) + struct.pack(">hhih", 0, 99, 1, -1),  # Produce v99
        struct.pack(">i", 3) + b"\x00\x03\x00",  # truncated header
    ],
)
def test_bad_frames_close_the_connection_and_others_keep_working(seeded, payload: bytes) -> None:
    broker, records = seeded
    with connect(broker.port) as sock:
        sock.sendall(payload)
        assert is_closed(sock)
    _still_serving(broker, records)


def test_oversized_frame_is_refused_before_its_body_arrives(broker_factory) -> None:
    broker = broker_factory(max_request_bytes=1024)
    with connect(broker.port) as sock:
        sock.sendall(struct.pack(">i", 10_000) + b"\x00" * 100)
        assert is_closed(sock)
    response = call(broker.port, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert response.error_code == ErrorCode.none


def test_truncated_body_closes_the_connection(seeded) -> None:
    broker, records = seeded
    frame = encode_request(produce_request("keep", [b"x"]))
    cut = frame[4:-10]
    with connect(broker.port) as sock:
        sock.sendall(struct.pack(">i", len(cut)) + cut)
        assert is_closed(sock)
    _still_serving(broker, records)


def test_unknown_api_versions_version_gets_v0_answer_with_our_ranges(broker) -> None:
    # KIP-511: the client sends a version we do not know; we answer in v0 with UNSUPPORTED_VERSION.
    body = struct.pack(">hhih", 18, 99, 42, 1) + b"x" + b"\x00\x02a\x021\x00"
    with connect(broker.port) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        frame = read_frame(sock)
    assert frame is not None
    correlation, error = struct.unpack_from(">ih", frame, 0)
    assert correlation == 42 and error == ErrorCode.unsupported_version
    (count,) = struct.unpack_from(">i", frame, 6)
    keys = {struct.unpack_from(">h", frame, 10 + 6 * i)[0] for i in range(count)}
    assert {0, 1, 2, 3, 18} <= keys


def test_invalid_topic_name_gets_invalid_topic_error(broker) -> None:
    response = call(
        broker.port,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name="bad/name"),),
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        ),
    )
    assert response.topics[0].error_code == ErrorCode.invalid_topic_exception


def test_produce_to_missing_partition(seeded) -> None:
    broker, records = seeded
    response = call(broker.port, produce_request("keep", [b"x"], partition=5))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.unknown_topic_or_partition
    _still_serving(broker, records)


def test_produce_with_corrupt_crc(seeded) -> None:
    broker, records = seeded
    batch = bytearray(record_batch([b"x", b"y"]))
    batch[-1] ^= 0xFF
    response = call(broker.port, produce_request("keep", bytes(batch)))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.corrupt_message
    _still_serving(broker, records)


def test_produce_with_garbage_records(seeded) -> None:
    broker, records = seeded
    response = call(broker.port, produce_request("keep", b"\x01" * 70))
    assert response.responses[0].partition_responses[0].error_code in (
        ErrorCode.corrupt_message,
        ErrorCode.unsupported_for_message_format,
    )
    _still_serving(broker, records)


def test_invalid_required_acks(seeded) -> None:
    broker, records = seeded
    response = call(broker.port, produce_request("keep", [b"x"], acks=2))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.invalid_required_acks
    _still_serving(broker, records)
