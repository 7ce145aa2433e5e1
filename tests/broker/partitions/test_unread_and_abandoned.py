"""Clients that do not read their responses, or leave while their fetches wait, cost the broker little.

- A connection's responses computed but not taken are bounded (max_queued_response_bytes): the broker
  stops starting, and reading, its requests until the client takes some.
- A connection that closes has its waiting fetches cancelled, so they stop at once rather than at their
  max wait; and no fetch waits longer than fetch_max_wait_cap_ms.
- Waiting fetches do not poll Redis: a partition they wait on is looked at once per interval, however
  many wait on it; they still wake for an entry written by a plain Redis client.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import redis
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from schooner.storage.keys import Keyspace
from tests.conftest import RunningBroker
from tests.wire import (
    call,
    connect,
    create_topics,
    decode_response,
    encode_request,
    fetch_request,
    produce_request,
    read_frame,
)

API_VERSIONS = ApiVersionsRequest(client_software_name="t", client_software_version="1")
NEVER = 2**31 - 1  # the largest max_wait_ms a Fetch can ask for: 24.8 days
MORE_THAN_WILL_COME = 50_000_000  # min_bytes: the fetch waits out its max wait


def _until(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def _steady(value: Callable[[], int]) -> int:
    """The value once it has stopped changing for half a second."""
    last, same_since = value(), time.monotonic()
    deadline = same_since + 20
    while time.monotonic() - same_since < 0.5:
        assert time.monotonic() < deadline, "never settled"
        time.sleep(0.05)
        now = value()
        if now != last:
            last, same_since = now, time.monotonic()
    return last


def _rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _commands_per_second(client: redis.Redis, seconds: float = 2.0) -> float:
    """Commands the test's Redis served per second meanwhile (less the INFO that measures them)."""
    before = int(client.info("stats")["total_commands_processed"])
    time.sleep(seconds)
    after = int(client.info("stats")["total_commands_processed"])
    return (after - before - 1) / seconds


def _fetched(sock: socket.socket, body: Any) -> tuple[int, Any]:
    frame = read_frame(sock)
    assert frame is not None, "connection closed"
    return decode_response(frame, body.__api_key__, body.__version__, body.__flexible__)


def _records(response: Any) -> bytes:
    return bytes(response.responses[0].partitions[0].records or b"")


def _unread_socket(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.connect(("127.0.0.1", port))
    sock.settimeout(10)
    return sock


def _produced_ok(response: Any) -> bool:
    return bool(response.responses[0].partition_responses[0].error_code == ErrorCode.none)


def test_responses_a_client_does_not_read_are_bounded_and_all_arrive_in_order_later(broker) -> None:
    stats = broker.broker.connection_stats
    create_topics(broker.port, "big", "other")
    for i in range(16):  # 1 MiB of records in batches of 64 KB
        assert _produced_ok(call(broker.port, produce_request("big", [b"%02d" % i + b"x" * 64_000])))
    large = fetch_request("big", 0, max_bytes=1 << 20)  # about 1 MiB each
    small = fetch_request("big", 0, max_bytes=64_000)  # one batch each
    base = _rss()
    hogs = [_unread_socket(broker.port) for _ in range(2)]
    reader = _unread_socket(broker.port)
    try:
        for sock in hogs:
            sock.sendall(b"".join(encode_request(large, correlation_id=i) for i in range(300)))
        reader.sendall(b"".join(encode_request(small, correlation_id=i) for i in range(300)))
        held = _steady(lambda: stats.held_requests)
        assert held < 3 * 64  # not all that max_in_flight_requests lets the three send
        assert _rss() - base < 80 * 1024 * 1024  # without a bound: 2 x 64 responses of 1 MiB
        # A hog starts only the fetches whose responses fit the bound (each reserves 1 MiB); the
        # reader's small responses fit all 64 of its requests.
        bound = broker.settings.max_queued_response_bytes
        assert held <= 2 * (bound // (1 << 20) + 1) + 64
        assert stats.response_pauses >= 3
        assert stats.peak_queued_response_bytes <= bound + 64 * 1024  # a response's header past 1 MiB
        assert stats.queued_response_bytes <= 3 * (bound + 64 * 1024)
        # Other clients are served meanwhile.
        assert call(broker.port, API_VERSIONS).error_code == ErrorCode.none
        assert _produced_ok(call(broker.port, produce_request("other", [b"v"])))
        assert _records(call(broker.port, fetch_request("other", 0)))
        # The slow reader reads at last: every response, in order, each with its records.
        for i in range(300):
            correlation_id, response = _fetched(reader, small)
            assert correlation_id == i
            assert _records(response)
    finally:
        for sock in (*hogs, reader):
            sock.close()
    _until(lambda: stats.held_requests == 0 and stats.queued_response_bytes == 0)


def test_a_closed_connections_waiting_fetches_stop_and_its_produce_is_kept(broker) -> None:
    stats = broker.broker.connection_stats
    waiters = broker.broker.ctx.data.waiters
    create_topics(broker.port, "gone")
    end = (
        int(
            call(broker.port, produce_request("gone", [b"seed"]))
            .responses[0]
            .partition_responses[0]
            .base_offset
        )
        + 1
    )
    poll = fetch_request("gone", end, max_wait_ms=NEVER, min_bytes=MORE_THAN_WILL_COME)
    socks = [connect(broker.port) for _ in range(100)]
    try:
        for sock in socks[1:]:
            sock.sendall(encode_request(poll))
        # One of them also sends a produce behind its fetch: that one is written all the same.
        socks[0].sendall(encode_request(poll) + encode_request(produce_request("gone", [b"kept"]), 2))
        _until(lambda: stats.held_requests == 101)  # the produce waits behind its fetch
    finally:
        for sock in socks:
            sock.close()
    _until(lambda: stats.held_requests == 0, timeout=5)
    assert stats.abandoned_requests == 100
    assert waiters.waiting == 0
    with redis.Redis.from_url(broker.redis_url) as client:
        assert _commands_per_second(client) < 30  # an idle broker's own upkeep: about 5
    got = call(broker.port, fetch_request("gone", end))
    assert b"kept" in _records(got)


def test_waiting_fetches_cost_redis_per_partition_not_per_fetch(broker) -> None:
    create_topics(broker.port, "busy")
    for i in range(4):
        assert _produced_ok(call(broker.port, produce_request("busy", [b"%d" % i * 1000])))
    time.sleep(1.2)  # past recent_batches' second: reads go to Redis
    stats = broker.broker.connection_stats
    # Each wants more than there is: every look at the partition reads its records again.
    poll = fetch_request("busy", 0, max_wait_ms=8000, min_bytes=MORE_THAN_WILL_COME)
    socks = [connect(broker.port) for _ in range(100)]
    try:
        for sock in socks:
            sock.sendall(encode_request(poll))
        _until(lambda: stats.held_requests == 100)
        time.sleep(1.0)  # the first look at the partition wakes them once
        with redis.Redis.from_url(broker.redis_url) as client:
            assert _commands_per_second(client) < 30  # was about 900 (each read again twice a second)
    finally:
        for sock in socks:
            sock.close()


def test_a_plain_redis_append_wakes_a_waiting_fetch(broker, redis_client: redis.Redis) -> None:
    create_topics(broker.port, "plain")
    end = (
        int(
            call(broker.port, produce_request("plain", [b"a"]))
            .responses[0]
            .partition_responses[0]
            .base_offset
        )
        + 1
    )
    stats = broker.broker.connection_stats
    poll = fetch_request("plain", end, max_wait_ms=8000)  # socket timeout 10 s
    with connect(broker.port) as sock:
        sock.sendall(encode_request(poll))
        _until(lambda: stats.held_requests == 1)
        time.sleep(0.7)  # the partition has been looked at: only a change of its last ID wakes it now
        encoding = broker.settings.topic_defaults["schooner.offset.encoding"]
        stream = Keyspace(broker.settings.keyspace).stream("plain", 0)
        redis_client.xadd(stream, {"value": b"plain"}, id="0-*" if encoding == "dense" else "*")
        _, response = _fetched(sock, poll)
    assert b"plain" in _records(response)


def test_a_fetch_waits_no_longer_than_the_cap(broker_factory) -> None:
    broker: RunningBroker = broker_factory(fetch_max_wait_cap_ms=300)
    create_topics(broker.port, "capped")
    end = (
        int(
            call(broker.port, produce_request("capped", [b"a"]))
            .responses[0]
            .partition_responses[0]
            .base_offset
        )
        + 1
    )
    poll = fetch_request("capped", end, max_wait_ms=NEVER, min_bytes=MORE_THAN_WILL_COME)
    with connect(broker.port) as sock:  # its timeout (10 s) fails the test if the fetch waits on
        sock.sendall(encode_request(poll))
        _, response = _fetched(sock, poll)
    assert response.error_code == ErrorCode.none
    assert response.responses[0].partitions[0].error_code == ErrorCode.none
    assert not _records(response)
    assert response.responses[0].partitions[0].high_watermark == end
