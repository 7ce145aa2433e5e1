"""Raw Kafka requests over a socket, encoded with kio (for tests of bad input and exact error codes)."""

from __future__ import annotations

import datetime
import io
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka.record._crecords import DefaultRecordBatchBuilder
from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.request_header.v1.header import RequestHeader as HeaderV1
from kio.schema.request_header.v2.header import RequestHeader as HeaderV2
from kio.serial import entity_reader, entity_writer

from schooner.protocol.apis import response_type
from schooner.protocol.records import BatchBuilder

# Counts and sizes a hostile or broken client might declare: legacy int32 and int16 maxima,
# -2 (below the null marker), and 5-byte varints of 2**31 - 1 and 2**32 - 1.
HUGE_COUNTS = (
    struct.pack(">i", 2**31 - 1),
    struct.pack(">i", -2),
    struct.pack(">h", 2**15 - 1),
    b"\xff\xff\xff\xff\x07",
    b"\xff\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x80\x01",  # a varint longer than Kafka allows
)
# Null markers: legacy arrays and bytes (int32 -1), legacy strings (int16 -1), compact ones (0).
NULL_MARKERS = (struct.pack(">i", -1), struct.pack(">h", -1), b"\x00")


def encode_request(body: Any, correlation_id: int = 1, client_id: str = "test") -> bytes:
    header_cls = HeaderV2 if body.__flexible__ else HeaderV1
    header = header_cls(
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header)
    entity_writer(type(body))(buf, body)
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def read_frame(sock: socket.socket) -> bytes | None:
    head = read_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return read_exact(sock, size)


def read_exact(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def decode_response(frame: bytes, api_key: int, version: int, flexible_header: bool) -> tuple[int, Any]:
    (correlation_id,) = struct.unpack_from(">i", frame, 0)
    pos = 4 + (1 if flexible_header else 0)
    body, _ = entity_reader(response_type(api_key, version))(frame, pos)
    return correlation_id, body


def call(port: int, body: Any) -> Any:
    """Sends one request on a new connection and returns the decoded response body."""
    with connect(port) as sock:
        (response,) = exchange(sock, [body])
        return response


def exchange(sock: socket.socket, bodies: Sequence[Any]) -> list[Any]:
    """Sends the requests together on one connection (pipelined) and returns their decoded responses."""
    sock.sendall(b"".join(encode_request(body, correlation_id=i) for i, body in enumerate(bodies)))
    responses = []
    for i, body in enumerate(bodies):
        frame = read_frame(sock)
        assert frame is not None, "connection closed"
        flexible = body.__flexible__ and body.__api_key__ != 18
        correlation_id, response = decode_response(frame, body.__api_key__, body.__version__, flexible)
        assert correlation_id == i
        responses.append(response)
    return responses


def is_closed(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def fetch_request(
    topic: str, offset: int, max_wait_ms: int = 0, min_bytes: int = 1, max_bytes: int = 1 << 20
) -> FetchRequest:
    """A Fetch (v12) of partition 0 of one topic from one offset."""
    return FetchRequest(
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=(
            FetchTopic(
                topic=topic,
                partitions=(FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=max_bytes),),
            ),
        ),
        forgotten_topics_data=(),
    )


def record_batch(values: Sequence[bytes], timestamp_ms: int | None = None) -> bytes:
    """One uncompressed record batch of value-only records, offsets from 0, stamped now by default."""
    stamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    builder = BatchBuilder(0, 0)
    for i, value in enumerate(values):
        builder.append(i, stamp, None, value, [])
    return builder.build()


def produce_request(
    topic: str, records: bytes | Sequence[bytes], partition: int = 0, acks: int = 1, timeout_ms: int = 5000
) -> ProduceRequest:
    """A Produce (v9) to one partition. `records` is either the raw records field (a batch, possibly a
    broken one) or the values of a new batch (see `record_batch`)."""
    raw = records if isinstance(records, bytes) else record_batch(records)
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(milliseconds=timeout_ms),
        topic_data=(
            TopicProduceData(
                name=topic, partition_data=(PartitionProduceData(index=partition, records=raw),)
            ),
        ),
    )


def idempotent_batch(
    values: Sequence[bytes], producer_id: int, producer_epoch: int, base_sequence: int
) -> bytes:
    """One uncompressed batch of value-only records, stamped now, as an idempotent producer sends it."""
    stamp = int(time.time() * 1000)
    builder = DefaultRecordBatchBuilder(2, 0, 0, producer_id, producer_epoch, base_sequence, 2**31 - 1)
    for i, value in enumerate(values):
        builder.append(i, stamp, None, value, [])
    return bytes(builder.build())


def init_producer_id_request() -> InitProducerIdRequest:
    """An InitProducerId (v4) for an idempotent producer: no transactional id, no current id."""
    return InitProducerIdRequest(transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60))


def create_topics(
    port: int,
    *names: str,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
    exist_ok: bool = True,
) -> None:
    """Creates topics (CreateTopics v7), each with `partitions` and `configs`; one that exists already is
    left as it is, or fails the test unless `exist_ok`. A raw Produce never creates a topic (as Kafka: a
    client's Metadata request does), so tests that produce raw call this first."""
    request = CreateTopicsRequest(
        topics=tuple(
            CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=-1,
                assignments=(),
                configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()),
            )
            for name in names
        ),
        timeout=datetime.timedelta(seconds=30),
        validate_only=False,
    )
    accepted = (0, 36) if exist_ok else (0,)  # none, TOPIC_ALREADY_EXISTS
    for topic in call(port, request).topics:
        assert topic.error_code in accepted, topic
