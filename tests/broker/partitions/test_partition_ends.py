"""Fetch's reads of partitions at their end are reused until an append notice
(broker/partitions/partition_ends.py): a record appended through any path is still returned by the next fetch
that asks for it."""

from __future__ import annotations

import datetime
import socket
import time

import redis
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.static.primitive import i32, i64

from schooner.protocol.client import decode_response, encode_request
from schooner.storage.keys import Keyspace
from tests.clients import Rec, confluent_produce

TOPIC = "ends"


def _fetch(bootstrap: str, offsets: dict[int, int]) -> dict[int, tuple[int, int]]:
    """One Fetch v12 (no session, no wait) of these partitions from their offsets: partition -> (bytes of
    records, high watermark)."""
    request = FetchRequest(
        max_wait=datetime.timedelta(0),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=0,
        topics=(
            FetchTopic(
                topic=TOPIC,
                partitions=tuple(
                    FetchPartition(
                        partition=i32(p), fetch_offset=i64(offset), partition_max_bytes=i32(1 << 20)
                    )
                    for p, offset in offsets.items()
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(encode_request(request, 1, "test"))
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            chunk = sock.recv(1 << 16)
            assert chunk, "the broker closed the connection"
            data += chunk
    _, response = decode_response(data[4:], request)
    out = {}
    for p in response.responses[0].partitions:
        assert p.error_code == 0
        out[p.partition_index] = (len(p.records or b""), p.high_watermark)
    return out


def test_a_cached_end_gives_way_to_an_append_through_the_broker(broker_factory) -> None:
    broker = broker_factory(default_partitions=3)
    confluent_produce(broker.bootstrap, TOPIC, [Rec(None, b"first")], partition=0)
    first = _fetch(broker.bootstrap, {0: 0, 1: 0, 2: 0})
    assert first[0][0] > 0 and first[0][1] == 1  # partition 0 read to its end
    assert first[1] == (0, 0) and first[2] == (0, 0)
    ends = broker.broker.ctx.data.ends
    assert len(ends) == 3  # every partition's end is kept, partition 0's at offset 1
    assert _fetch(broker.bootstrap, {0: 1})[0] == (0, 1)  # from the kept end: nothing new
    confluent_produce(broker.bootstrap, TOPIC, [Rec(None, b"second")], partition=0)
    confluent_produce(broker.bootstrap, TOPIC, [Rec(None, b"other")], partition=2)
    after = _fetch(broker.bootstrap, {0: 1, 2: 0})
    assert after[0][0] > 0 and after[0][1] == 2  # the append's notice dropped the cached end
    assert after[2][0] > 0 and after[2][1] == 1


def test_a_plain_redis_append_is_seen_once_the_cached_end_expires(broker_factory) -> None:
    broker = broker_factory(default_partitions=3)
    confluent_produce(broker.bootstrap, TOPIC, [Rec(None, b"first")], partition=1)
    assert _fetch(broker.bootstrap, {1: 0})[1][1] == 1
    assert _fetch(broker.bootstrap, {1: 1})[1] == (0, 1)  # kept: partition 1 is at its end at offset 1
    # A plain Redis writer publishes no notice; the fetch finds its entry once the kept read is too old.
    client = redis.Redis.from_url(broker.redis_url)
    try:
        client.execute_command(
            "XADD", Keyspace(broker.settings.keyspace).stream(TOPIC, 1), "0-*", "value", b"plain"
        )
    finally:
        client.close()
    deadline = time.monotonic() + 30
    while (found := _fetch(broker.bootstrap, {1: 1})[1]) == (0, 1) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found[0] > 0 and found[1] == 2
