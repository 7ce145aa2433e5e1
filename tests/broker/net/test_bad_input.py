"""Bad input gets a Kafka error or a closed connection; the broker keeps serving and data stays intact.

An API the broker does not serve but kio has a schema for is answered with UNSUPPORTED_VERSION in its own
response, on a connection that stays open; a frame that cannot be parsed, an API key kio does not know,
and a served API at a version out of its range (as Kafka does) close the connection."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from schooner.protocol.apis import SUPPORTED_VERSIONS, request_type
from schooner.protocol.messages import make, sibling
from tests.clients import Rec, confluent_consume, confluent_produce
from tests.wire import (
    call,
    connect,
    decode_response,
    encode_request,
    is_closed,
    produce_request,
    read_frame,
    record_batch,
)


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
        struct.pack(">i", 10)
        + struct.pack(">hhih", 1, 3, 1, -1),  # Fetch v3: served API, version below range
        struct.pack(">i", 10) + struct.pack(">hhih", 3, 14, 1, -1),  # Metadata v14: above range
        struct.pack(">i", 10) + struct.pack(">hhih", 55, 9, 1, -1),  # unserved API at a version kio lacks
        struct.pack(">i", 13) + struct.pack(">hhih", 55, 0, 1, -1) + b"\x05\x00\x00",  # unserved, bad body
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


def _unserved_request(key: int, version: int, **values: Any) -> Any:
    assert key not in SUPPORTED_VERSIONS, f"{key} is served now: pick another API for this test"
    return make(request_type(key, version), **values)


def _quorum_topic(name: str) -> Any:
    cls = request_type(DESCRIBE_QUORUM, 2)
    partition = make(sibling(cls, "PartitionData"), partition_index=0)
    return make(sibling(cls, "TopicData"), topic_name=name, partitions=(partition,))


# APIs Schooner has no plan to serve soon: the KRaft quorum's description (top-level error) and
# transaction markers, which brokers send each other (entries echoed per partition).
DESCRIBE_QUORUM = 55
WRITE_TXN_MARKERS = 27


def test_an_unserved_api_gets_unsupported_version_and_the_connection_keeps_serving(seeded) -> None:
    broker, records = seeded
    quorum = _unserved_request(DESCRIBE_QUORUM, 2, topics=(_quorum_topic("__cluster_metadata"),))
    cls = request_type(WRITE_TXN_MARKERS, 1)
    topic = make(sibling(cls, "WritableTxnMarkerTopic"), name="keep", partition_indexes=(0, 3))
    marker = make(
        sibling(cls, "WritableTxnMarker"), producer_id=7, producer_epoch=1, transaction_result=True,
        topics=(topic,), coordinator_epoch=0,
    )  # fmt: skip
    markers = _unserved_request(WRITE_TXN_MARKERS, 1, markers=(marker,))
    with connect(broker.port) as sock:
        for correlation, request in enumerate([quorum, markers, quorum], start=10):
            sock.sendall(encode_request(request, correlation))
        sock.sendall(
            encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 13)
        )
        answers = []
        for key, version in [(55, 2), (27, 1), (55, 2), (18, 3)]:
            frame = read_frame(sock)
            assert frame is not None, "the connection closed"
            answers.append(decode_response(frame, key, version, flexible_header=key != 18))
    assert [correlation for correlation, _ in answers] == [10, 11, 12, 13]
    (_, described), (_, written), _, (_, versions) = answers
    assert described.error_code == ErrorCode.unsupported_version
    assert described.error_message == "DESCRIBE_QUORUM is not supported by this broker"
    assert described.topics == () and described.nodes == ()
    assert [
        (
            m.producer_id,
            [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in m.topics],
        )
        for m in written.markers
    ] == [(7, [("keep", [(0, ErrorCode.unsupported_version), (3, ErrorCode.unsupported_version)])])]
    assert versions.error_code == ErrorCode.none
    assert {k.api_key for k in versions.api_keys}.isdisjoint({DESCRIBE_QUORUM, WRITE_TXN_MARKERS})
    _still_serving(broker, records)


def test_an_unserved_api_on_one_connection_leaves_the_others_alone(seeded) -> None:
    broker, records = seeded
    with connect(broker.port) as idle, connect(broker.port) as probing:
        idle.sendall(encode_request(produce_request("keep", [b"before"]), 1))
        assert read_frame(idle) is not None
        for correlation in range(20):
            probing.sendall(encode_request(_unserved_request(DESCRIBE_QUORUM, 2, topics=()), correlation))
        for correlation in range(20):
            frame = read_frame(probing)
            assert frame is not None and struct.unpack_from(">i", frame)[0] == correlation
        idle.sendall(encode_request(produce_request("keep", [b"after"]), 2))
        frame = read_frame(idle)
        assert frame is not None
    _, response = decode_response(frame, 0, 9, flexible_header=True)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none
    got = confluent_consume(broker.bootstrap, "keep", len(records) + 2)
    assert [m.value() for m in got][-2:] == [b"before", b"after"]
