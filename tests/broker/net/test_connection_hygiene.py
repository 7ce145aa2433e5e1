"""Connection hygiene: idle and slow connections are closed, connection caps turn the newest away,
one connection cannot make the broker hold more than its in-flight limits, and a graceful stop answers
what was read before closing."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchRequest

from tests.clients import Rec, confluent_consume, confluent_produce
from tests.conftest import RunningBroker
from tests.wire import (
    call,
    connect,
    create_topics,
    decode_response,
    encode_request,
    fetch_request,
    is_closed,
    produce_request,
    read_frame,
)

API_VERSIONS = ApiVersionsRequest(client_software_name="t", client_software_version="1")


def _long_poll(topic: str, end: int, max_wait_ms: int) -> FetchRequest:
    """A fetch at the end of the log that wants more than will come: held for max_wait_ms."""
    return fetch_request(topic, end, max_wait_ms, min_bytes=50_000_000)


def _seed(broker: RunningBroker, topic: str) -> int:
    """Creates the topic with one record; returns the offset after it."""
    return int(confluent_produce(broker.bootstrap, topic, [Rec(None, b"seed")])[0].offset()) + 1


def _read(sock: socket.socket, body: Any) -> tuple[int, Any]:
    frame = read_frame(sock)
    assert frame is not None, "connection closed"
    flexible = body.__flexible__ and body.__api_key__ != 18
    return decode_response(frame, body.__api_key__, body.__version__, flexible)


def _until(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def _answers(sock: socket.socket) -> bool:
    sock.sendall(encode_request(API_VERSIONS, correlation_id=99))
    return _read(sock, API_VERSIONS)[1].error_code == ErrorCode.none


def _from(ip: str, port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(ip, 0))


def _produced_ok(response: Any) -> bool:
    return bool(response.responses[0].partition_responses[0].error_code == ErrorCode.none)


def test_idle_connection_is_closed_but_busy_or_active_ones_are_not(broker_factory) -> None:
    broker = broker_factory(connections_max_idle_ms=600)
    end = _seed(broker, "idle")
    with connect(broker.port) as sock:
        assert _answers(sock)
        quiet_since = time.monotonic()
        assert is_closed(sock)
        assert 0.5 <= time.monotonic() - quiet_since < 5
    assert broker.broker.connection_stats.closed_idle >= 1

    with connect(broker.port) as sock:  # a request every 200 ms keeps it open well past the limit
        for _ in range(8):
            assert _answers(sock)
            time.sleep(0.2)
    with connect(broker.port) as sock:  # a request in flight is not idleness, however long it takes
        sock.sendall(encode_request(_long_poll("idle", end, 1500), correlation_id=5))
        assert _read(sock, _long_poll("idle", end, 1500))[0] == 5
        assert _answers(sock)


def test_incomplete_frame_closes_after_request_timeout_even_while_bytes_trickle(broker_factory) -> None:
    broker = broker_factory(request_timeout_ms=600)
    frame = encode_request(API_VERSIONS)
    with connect(broker.port) as silent, connect(broker.port) as slow:
        started = time.monotonic()
        slow.settimeout(0.1)
        closed = False
        for byte in frame[:-1]:  # one byte every 100 ms: active, but the frame never completes in time
            try:
                slow.sendall(bytes([byte]))
                closed = slow.recv(1) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
            if closed:
                break
        assert closed
        assert 0.5 <= time.monotonic() - started < 5
        # A connection that sends nothing at all is left to the (much longer) idle timeout.
        assert _answers(silent)
    assert broker.broker.connection_stats.closed_incomplete_frame == 1
    confluent_produce(broker.bootstrap, "after-slow", [Rec(None, b"v")])


def test_newest_connection_over_the_per_address_cap_is_closed(broker_factory, caplog) -> None:
    broker = broker_factory(max_connections_per_ip=3)
    caplog.set_level(logging.WARNING, logger="schooner.broker.net.listener")
    older = [_from("127.0.0.2", broker.port) for _ in range(3)]
    try:
        assert all(_answers(s) for s in older)
        for _ in range(10):
            with _from("127.0.0.2", broker.port) as newest:
                assert is_closed(newest)
        assert all(_answers(s) for s in older)
        # Other addresses are served: a real client from 127.0.0.1 produces and consumes.
        confluent_produce(broker.bootstrap, "per-ip", [Rec(None, b"v")])
        assert len(confluent_consume(broker.bootstrap, "per-ip", 1)) == 1
        assert broker.broker.connection_stats.refused == 10
        lines = [r for r in caplog.records if "max_connections_per_ip" in r.getMessage()]
        assert len(lines) == 1  # a flood of refusals is one line, not one each
        older.pop().close()
        _until(lambda: broker.broker.connection_stats.open == 2)
        with _from("127.0.0.2", broker.port) as again:
            assert _answers(again)
    finally:
        for s in older:
            s.close()


def test_newest_connection_over_the_total_cap_is_closed(broker_factory) -> None:
    broker = broker_factory(max_connections=3)
    older = [_from(ip, broker.port) for ip in ("127.0.0.2", "127.0.0.3", "127.0.0.4")]
    try:
        assert all(_answers(s) for s in older)
        with _from("127.0.0.5", broker.port) as newest:
            assert is_closed(newest)
        assert all(_answers(s) for s in older)
        assert broker.broker.connection_stats.refused == 1
    finally:
        for s in older:
            s.close()


def test_request_cap_stops_reading_until_responses_go_out(broker_factory) -> None:
    broker = broker_factory(max_in_flight_requests=4)
    end = _seed(broker, "held")
    stats = broker.broker.connection_stats
    poll = _long_poll("held", end, 2000)
    with connect(broker.port) as sock:
        # The long poll answers first (request order), so everything behind it stays held meanwhile.
        sock.sendall(
            encode_request(poll, correlation_id=0)
            + b"".join(encode_request(API_VERSIONS, correlation_id=i) for i in range(1, 41))
        )
        _until(lambda: stats.held_requests == 4)
        time.sleep(0.5)
        assert stats.held_requests == 4 and stats.peak_held_requests == 4
        assert stats.backpressure_pauses >= 1
        assert _read(sock, poll)[0] == 0
        assert [_read(sock, API_VERSIONS)[0] for _ in range(40)] == list(range(1, 41))
    assert stats.peak_held_requests == 4
    _until(lambda: stats.held_requests == 0 and stats.held_bytes == 0)


def test_byte_cap_stops_reading_and_nothing_is_lost(broker_factory) -> None:
    cap = 64 * 1024
    broker = broker_factory(max_in_flight_bytes=cap)
    end = _seed(broker, "bytes")
    stats = broker.broker.connection_stats
    poll = _long_poll("bytes", end, 1500)
    produces = [produce_request("bytes", [b"%02d" % i + b"x" * 15_000]) for i in range(20)]
    with connect(broker.port) as sock:
        sock.sendall(
            encode_request(poll, correlation_id=0)
            + b"".join(encode_request(p, correlation_id=i) for i, p in enumerate(produces, 1))
        )
        _until(lambda: stats.held_requests > 1)
        time.sleep(0.4)
        assert 1 < stats.held_requests < 21
        assert stats.held_bytes <= cap and stats.peak_held_bytes <= cap
        assert _read(sock, poll)[0] == 0
        responses = [_read(sock, p) for p in produces]
    assert [c for c, _ in responses] == list(range(1, 21))
    assert all(_produced_ok(r) for _, r in responses)
    assert stats.peak_held_bytes <= cap
    got = confluent_consume(broker.bootstrap, "bytes", 21)
    assert [m.value()[:2] for m in got[1:]] == [b"%02d" % i for i in range(20)]


def test_a_request_larger_than_the_byte_cap_is_served_alone(broker_factory) -> None:
    broker = broker_factory(max_in_flight_bytes=4096)
    end = _seed(broker, "large")
    stats = broker.broker.connection_stats
    poll = _long_poll("large", end, 1000)
    large = produce_request("large", [b"y" * 32_000])
    with connect(broker.port) as sock:
        sock.sendall(encode_request(poll, correlation_id=0) + encode_request(large, correlation_id=1))
        _until(lambda: stats.backpressure_pauses >= 1)
        assert stats.held_requests == 1  # the large one waits until the poll is answered
        assert _read(sock, poll)[0] == 0
        correlation, response = _read(sock, large)
    assert correlation == 1 and _produced_ok(response)
    assert stats.peak_held_bytes > 32_000  # it was held, alone


def test_client_that_does_not_read_its_responses_is_closed(broker_factory) -> None:
    broker = broker_factory(request_timeout_ms=1000)
    stats = broker.broker.connection_stats
    create_topics(broker.port, "unread")
    for i in range(8):
        assert _produced_ok(call(broker.port, produce_request("unread", [b"%d" % i + b"z" * 100_000])))
    first = confluent_consume(broker.bootstrap, "unread", 1)[0].offset()
    fetch = fetch_request("unread", first, 0, 1, max_bytes=256 * 1024)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.connect(("127.0.0.1", broker.port))
    with sock:
        sock.sendall(b"".join(encode_request(fetch, correlation_id=i) for i in range(60)))
        _until(lambda: stats.closed_unread_response == 1)
        _until(lambda: stats.held_requests == 0 and stats.open == 0)
    with connect(broker.port) as fresh:
        assert _answers(fresh)


def test_many_idle_and_half_sent_connections_do_not_slow_a_produce(broker) -> None:
    half = encode_request(API_VERSIONS)[:9]
    socks = []
    try:
        for i in range(1500):
            s = connect(broker.port)
            if i % 2:
                s.sendall(half)
            socks.append(s)
        _until(lambda: broker.broker.connection_stats.open == 1500)
        create_topics(broker.port, "crowded")
        started = time.monotonic()
        response = call(broker.port, produce_request("crowded", [b"v"]))
        assert _produced_ok(response)
        assert time.monotonic() - started < 0.5
        assert broker.broker.connection_stats.refused == 0
    finally:
        for s in socks:
            s.close()


@pytest.mark.parametrize("acks", [1, -1])
def test_graceful_stop_answers_what_was_read_and_refuses_new_connections(broker_factory, acks) -> None:
    broker = broker_factory(shutdown_timeout_ms=10_000)
    end = _seed(broker, "drain-wait")
    _seed(broker, "drain")
    stats = broker.broker.connection_stats
    poll = _long_poll("drain-wait", end, 2500)
    produces = [produce_request("drain", [b"p%d" % i], acks=acks) for i in range(3)]
    port = broker.port  # the broker stops listening below
    idle = connect(port)
    sock = connect(port)
    with idle, sock:
        assert _answers(idle)
        sock.sendall(
            encode_request(poll, correlation_id=0)
            + b"".join(encode_request(p, correlation_id=i) for i, p in enumerate(produces, 1))
        )
        _until(lambda: stats.held_requests == 4)
        started = time.monotonic()
        stopping = asyncio.run_coroutine_threadsafe(broker.broker.stop(graceful=True), broker.loop)

        def refused() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except ConnectionRefusedError:
                return True
            except ConnectionResetError:  # reached the listener as it closed: not refused yet
                return False
            return False

        _until(refused, timeout=5)
        assert is_closed(idle)  # nothing in flight: closed at once, not after the poll
        assert time.monotonic() - started < 2.0
        assert _read(sock, poll)[0] == 0
        responses = [_read(sock, p) for p in produces]
        assert is_closed(sock)
    stopping.result(15)
    broker.stopped = True
    broker.loop.call_soon_threadsafe(broker.loop.stop)
    broker.thread.join(10)
    assert [c for c, _ in responses] == [1, 2, 3]
    assert all(_produced_ok(r) for _, r in responses)
    # What was acknowledged is stored: another broker on the same Redis reads it back.
    other = broker_factory()
    got = confluent_consume(other.bootstrap, "drain", 4)
    assert [m.value() for m in got] == [b"seed", b"p0", b"p1", b"p2"]
