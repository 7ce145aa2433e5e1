"""Mutated copies of real request frames, sent to a live broker: it keeps serving and the data stays intact.

The frames are recorded from real clients (confluent-kafka's producer, group consumer and admin
client, through a recording proxy the broker advertises) plus kio-encoded frames of APIs those
clients did not use. Each mutated copy goes on its own connection, straight to the broker.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import logging
import random
import resource
import select
import socket
import struct
import threading
import time
import typing
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.consumer_group_heartbeat.v0.request import ConsumerGroupHeartbeatRequest
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v4.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.list_groups.v4.request import ListGroupsRequest
from kio.schema.metadata.v1.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest, OffsetFetchRequestGroup

from schooner.protocol.apis import ApiKey
from schooner.protocol.messages import decode_request
from tests.clients import Rec, confluent_consume, confluent_produce
from tests.proxy import read_frame
from tests.wire import HUGE_COUNTS, NULL_MARKERS, call, encode_request

TOPIC = "intact"
GROUP = "recorded-group"
MUTATIONS = 400
RECORDED_APIS = (
    ApiKey.API_VERSIONS,
    ApiKey.METADATA,
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.LEAVE_GROUP,
)


class RecordingProxy:
    """Forwards client connections to the broker and keeps a copy of every request frame."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.target_port = 0  # set once the broker, which advertises this proxy, is up
        self.frames: list[bytes] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client), daemon=True).start()

    def _requests(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while (frame := read_frame(src)) is not None:
                with self._lock:
                    self.frames.append(frame)
                dst.sendall(frame)
        _close(src, dst)

    def _responses(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := src.recv(1 << 16):
                dst.sendall(chunk)
        _close(src, dst)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            _close(*self._sockets)


def _close(*socks: socket.socket) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.close()


def _record_real_clients(bootstrap: str, records: list[Rec]) -> list[int]:
    """Drives the real clients whose frames the proxy records; also seeds the data checked at the end.

    Returns the offsets the seed records were given."""
    idempotent: dict[str, Any] = {"enable.idempotence": True, "acks": "all"}
    delivered = confluent_produce(bootstrap, TOPIC, records, **idempotent)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    got = 0
    deadline = time.monotonic() + 20
    while got < len(records) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert got == len(records)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.list_topics(timeout=10)
    admin.list_consumer_groups().result()
    admin.describe_consumer_groups([GROUP])[GROUP].result()
    return [m.offset() for m in delivered]


def _kio_frames() -> list[bytes]:
    """Read-only requests of APIs the recorded clients may not have sent."""
    bodies: list[Any] = [
        ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"),
        MetadataRequest(topics=(MetadataRequestTopic(name=TOPIC),)),
        FetchRequest(
            replica_id=-1,
            max_wait=datetime.timedelta(milliseconds=100),
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            topics=(
                FetchTopic(
                    topic=TOPIC,
                    partitions=(FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024),),
                ),
            ),
        ),
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(resource_type=2, resource_name=TOPIC, configuration_keys=None),
            ),
            include_synonyms=True,
            include_documentation=True,
        ),
        DescribeGroupsRequest(groups=(GROUP,), include_authorized_operations=True),
        ListGroupsRequest(states_filter=()),
        DescribeClusterRequest(include_cluster_authorized_operations=False),
        OffsetFetchRequest(
            groups=(OffsetFetchRequestGroup(group_id=GROUP, topics=None),), require_stable=False
        ),
        ConsumerGroupHeartbeatRequest(
            group_id="fuzz-group",
            member_id="fuzz-member",
            member_epoch=0,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=datetime.timedelta(seconds=5),
            subscribed_topic_names=("fuzz-topic",),
            server_assignor=None,
            topic_partitions=(),
        ),
    ]
    return [encode_request(b, correlation_id=i) for i, b in enumerate(bodies)]


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    """One to three mutations of a whole frame, size prefix included."""
    data = bytearray(frame)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        kind = rng.choice(["flip", "flip", "truncate", "insert", "delete", "huge", "null", "size", "header"])
        if kind == "flip" and at < len(data):
            data[at] ^= rng.randint(1, 255)
        elif kind == "truncate":
            del data[max(at, 4) :]
        elif kind == "insert":
            data[at:at] = rng.randbytes(rng.randint(1, 8))
        elif kind == "delete":
            del data[at : at + rng.randint(1, 8)]
        elif kind == "huge":
            pattern = rng.choice(HUGE_COUNTS)
            data[at : at + len(pattern)] = pattern
        elif kind == "null":
            at, pattern = rng.choice(_count_like(data) or [(at, rng.choice(NULL_MARKERS))])
            data[at : at + len(pattern)] = pattern
        elif kind == "size" and len(data) >= 4:  # a size prefix that lies
            data[0:4] = struct.pack(">i", rng.choice([0, 1, len(data) - 5, len(data) + 3, 2**31 - 1, -1]))
        elif kind == "header" and len(data) >= 8:  # another API key or version
            data[4:8] = struct.pack(">hh", rng.randint(-2, 70), rng.randint(-1, 20))
    # Keep the size prefix honest unless a "size" mutation chose to lie: other mutations must reach
    # the decoder rather than leave the broker waiting for bytes that never come.
    if len(data) >= 4 and struct.unpack_from(">i", data)[0] == len(frame) - 4:
        data[0:4] = struct.pack(">i", len(data) - 4)
    return bytes(data)


def _count_like(data: bytearray) -> list[tuple[int, bytes]]:
    """Positions that look like an array count (a small int32, or a small compact count), each with
    the null marker of its kind: mutations there test what a null where none is allowed does."""
    found: list[tuple[int, bytes]] = []
    for i in range(8, len(data)):
        if i + 4 <= len(data) and 0 < struct.unpack_from(">i", data, i)[0] <= 16:
            found.append((i, NULL_MARKERS[0]))
        if 1 < data[i] <= 17:
            found.append((i, NULL_MARKERS[2]))
    return found


def _null_array_variants(corpus: list[bytes]) -> list[bytes]:
    """For one frame of each API and version: copies with one array its schema says cannot be null
    sent as null (kio writes what it is given, as a buggy client might)."""
    firsts: dict[tuple[int, int], bytes] = {}
    for raw in corpus:
        firsts.setdefault(struct.unpack_from(">hh", raw, 4), raw)
    out: list[bytes] = []
    for raw in firsts.values():
        request = decode_request(raw[4:])
        for body in _with_one_null_array(request.body):
            out.append(encode_request(body, request.header.correlation_id, request.header.client_id or ""))
    return out


def _with_one_null_array(entity: Any) -> Iterator[Any]:
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if isinstance(value, tuple):
            if type(None) not in typing.get_args(field.type):
                yield dataclasses.replace(entity, **{field.name: None})
            if value and dataclasses.is_dataclass(value[0]):
                for first in _with_one_null_array(value[0]):
                    yield dataclasses.replace(entity, **{field.name: (first, *value[1:])})
        elif dataclasses.is_dataclass(value):
            for inner in _with_one_null_array(value):
                yield dataclasses.replace(entity, **{field.name: inner})


def _send_all(port: int, frames: list[bytes], wait: float, batch: int = 200) -> dict[str, int]:
    """Sends each frame on its own connection, a batch of connections at a time (to stay well under
    the open-file limit, which the in-process broker shares); counts answered, closed and open ones."""
    outcome = {"answered": 0, "closed": 0, "open": 0}
    for start in range(0, len(frames), batch):
        for key, n in _send_batch(port, frames[start : start + batch], wait).items():
            outcome[key] += n
    return outcome


def _send_batch(port: int, frames: list[bytes], wait: float) -> dict[str, int]:
    outcome = {"answered": 0, "closed": 0, "open": 0}
    socks: list[socket.socket] = []
    try:
        for raw in frames:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            socks.append(sock)
            with contextlib.suppress(OSError):  # the broker may close before all bytes are in
                sock.sendall(raw)
        pending = {s: b"" for s in socks}
        deadline = time.monotonic() + wait
        while pending and time.monotonic() < deadline:
            ready, _, _ = select.select(list(pending), [], [], 0.2)
            for s in ready:
                try:
                    chunk = s.recv(1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    del pending[s]
                    outcome["closed"] += 1
                    continue
                pending[s] += chunk
                if len(pending[s]) >= 4 and len(pending[s]) >= 4 + struct.unpack_from(">i", pending[s])[0]:
                    del pending[s]
                    outcome["answered"] += 1
        outcome["open"] = len(pending)
    finally:
        _close(*socks)
    return outcome


def test_mutated_recorded_frames_leave_the_broker_serving_and_data_intact(
    broker_factory: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    started = time.monotonic()
    proxy = RecordingProxy()
    try:
        broker = broker_factory(advertise=f"127.0.0.1:{proxy.port}")
        proxy.target_port = broker.port
        bootstrap = f"127.0.0.1:{proxy.port}"
        records = [Rec(b"k%d" % i, b"v%d" % i) for i in range(20)]
        offsets = _record_real_clients(bootstrap, records)
        recorded = list(proxy.frames)
        apis = {struct.unpack_from(">h", f, 4)[0] for f in recorded}
        # The recorded clients covered the data path and the classic group protocol.
        assert set(RECORDED_APIS) <= apis, [ApiKey(a).name for a in set(RECORDED_APIS) - apis]

        # Sorted, so that the seeded choice below varies only as much as the clients' timing does.
        corpus = sorted(recorded) + _kio_frames()
        # Unmutated, the first frames are all answered (replayed produces included): what the broker
        # refuses below, it refuses for the mutations.
        assert _send_all(broker.port, corpus[:40], wait=10)["answered"] == min(40, len(corpus))

        rng = random.Random(20240609)
        mutated = [_mutate(rng, rng.choice(corpus)) for _ in range(MUTATIONS)]
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        caplog.set_level(logging.ERROR, logger="schooner")
        outcome = _send_all(broker.port, mutated, wait=3)
        rss_grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
        assert sum(outcome.values()) == MUTATIONS
        assert outcome["closed"] > MUTATIONS // 4, outcome  # most corrupt frames are refused
        assert rss_grown_mb < 300, f"the broker grew by {rss_grown_mb:.0f} MB"
        # An array sent as null where its schema has none is refused, never handed to a handler.
        nulled = _null_array_variants(corpus)
        assert _send_all(broker.port, nulled, wait=3) == {"answered": 0, "closed": len(nulled), "open": 0}
        # A frame that decodes is answered or refused; no handler trips over what it decoded to.
        crashes = [r.getMessage() for r in caplog.records if r.exc_info and r.name.startswith("schooner")]
        assert not crashes, crashes

        # The broker still answers on new connections, and real clients still produce and consume.
        hello = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        assert call(broker.port, hello).error_code == ErrorCode.none
        more = [Rec(b"after%d" % i, b"v%d" % i) for i in range(5)]
        confluent_produce(bootstrap, TOPIC, more)
        got = confluent_consume(bootstrap, TOPIC, len(records) + len(more))
        assert [(m.key(), m.value()) for m in got] == [(r.key, r.value) for r in records + more]
        got_offsets = [m.offset() for m in got]
        assert got_offsets[: len(records)] == offsets
        assert got_offsets == sorted(set(got_offsets))
    finally:
        proxy.close()
    assert time.monotonic() - started < 60
