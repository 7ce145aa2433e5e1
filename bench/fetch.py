"""Fetch throughput: kcat reads a topic end to end through the broker; a raw XRANGE loop is the baseline."""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from schooner.protocol.client import decode_response, encode_request

XRANGE_COUNT = 1000
# With -e, librdkafka only sees the end of a partition when a fetch at the high watermark returns, and the
# broker holds that empty fetch for fetch.wait.max.ms (500 ms by default) as Kafka does. That idle wait is not
# fetch throughput, so kcat gets a short one; fetches that find records return at once whatever this is.
KCAT_FETCH_WAIT_MS = 10
_READ_CHUNK = 1 << 16
# The wire client's limits: librdkafka's defaults (fetch.max.bytes, max.partition.fetch.bytes).
WIRE_MAX_BYTES = 52428800
WIRE_PARTITION_MAX_BYTES = 1048576


@dataclass(frozen=True, slots=True)
class KcatRun:
    messages: int
    seconds: float  # kcat start to exit: connection, metadata, offset lookup and every fetch
    first_record_seconds: float  # kcat start to its first output: the fixed start-up cost
    msgs_per_s: float  # messages / seconds
    steady_msgs_per_s: float  # messages / (seconds - first_record_seconds)


@dataclass(frozen=True, slots=True)
class XrangeRun:
    messages: int
    seconds: float
    msgs_per_s: float


def kcat_consume(
    bootstrap: str,
    topic: str,
    expected: int,
    timeout: float = 120.0,
    isolation: str | None = None,
    partition: int | None = 0,
    extra: Sequence[str] = (),
) -> KcatRun:
    """Consumes a partition of `topic` (None: every partition) from the beginning until its end (-e),
    one output line per record. isolation: the consumer's isolation.level (None: librdkafka's default,
    read_committed). extra: more kcat arguments (security settings, for one).

    The output (the offset of each record) is counted here in 64 KiB reads, which costs little next to kcat.
    """
    args = ["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q"]
    if partition is not None:
        args += ["-p", str(partition)]
    args += ["-X", f"fetch.wait.max.ms={KCAT_FETCH_WAIT_MS}", "-f", "%o\n"]
    if isolation is not None:
        args += ["-X", f"isolation.level={isolation}"]
    args += extra
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: kcat can never block on a full stderr
        start = time.perf_counter()
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors)
        lines, first, code = _count_lines(process, timeout)
        end = time.perf_counter()
        errors.seek(0)
        stderr = errors.read().decode(errors="replace").strip()
    if code != 0:
        raise RuntimeError(f"kcat exited with {code} after {lines} records: {stderr}")
    if lines != expected:
        raise RuntimeError(f"kcat read {lines} records, expected {expected}: {stderr}")
    seconds = end - start
    first_seconds = (first or end) - start
    steady = lines / (seconds - first_seconds) if seconds > first_seconds else float("nan")
    return KcatRun(lines, seconds, first_seconds, lines / seconds, steady)


def _count_lines(process: subprocess.Popen[bytes], timeout: float) -> tuple[int, float | None, int]:
    """Reads the process's stdout to its end; returns (lines, time of the first output, exit code)."""
    assert process.stdout is not None
    watchdog = threading.Timer(timeout, process.kill)
    watchdog.start()
    fd = process.stdout.fileno()
    lines = 0
    first: float | None = None
    try:
        while True:
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                break
            if first is None:
                first = time.perf_counter()
            lines += chunk.count(b"\n")
        return lines, first, process.wait()
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()


def _raw_reply(response: Any, **_options: Any) -> Any:
    return response


def raw_xrange(redis_url: str, key: str, expected: int, count: int = XRANGE_COUNT) -> XrangeRun:
    """Reads the whole stream with XRANGE COUNT `count`, with redis-py's reply conversion switched off."""
    client = redis.Redis.from_url(redis_url)
    client.response_callbacks["XRANGE"] = _raw_reply
    try:
        client.ping()  # connect outside the timed loop
        messages = 0
        start = time.perf_counter()
        lower: bytes = b"-"
        while True:
            entries = client.execute_command("XRANGE", key, lower, "+", "COUNT", count)
            if not entries:
                break
            messages += len(entries)
            lower = b"(" + entries[-1][0]
        seconds = time.perf_counter() - start
    finally:
        client.close()
    if messages != expected:
        raise RuntimeError(f"XRANGE read {messages} entries of {key}, expected {expected}")
    return XrangeRun(messages, seconds, messages / seconds)


@dataclass(frozen=True, slots=True)
class WireRun:
    messages: int
    fetches: int
    seconds: float  # connected to the last record: every Fetch round trip
    msgs_per_s: float
    record_bytes: int = 0  # the records fields of every response: what the network carried, less framing


def wire_consume(
    bootstrap: str,
    topic: str,
    expected: int,
    partition_max_bytes: int = WIRE_PARTITION_MAX_BYTES,
    max_bytes: int = WIRE_MAX_BYTES,
) -> WireRun:
    """Reads partition 0 of `topic` from offset 0 until `expected` records, with Fetch v12 requests
    over one socket, one in flight (as librdkafka keeps per broker), from this process.

    A client that does next to nothing per record: records are counted from the batch headers and
    never decoded, so the figure is the broker's (and Redis's) speed, not a client library's.
    """
    host, _, port = bootstrap.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    offset = messages = fetches = record_bytes = 0
    reader = _Reader(sock)
    try:
        start = time.perf_counter()
        while messages < expected:
            request = FetchRequest(
                max_wait=datetime.timedelta(milliseconds=KCAT_FETCH_WAIT_MS),
                min_bytes=1,
                max_bytes=max_bytes,
                isolation_level=0,
                topics=(
                    FetchTopic(
                        topic=topic,
                        partitions=(
                            FetchPartition(
                                partition=0, fetch_offset=offset, partition_max_bytes=partition_max_bytes
                            ),
                        ),
                    ),
                ),
                forgotten_topics_data=(),
            )
            fetches += 1
            sock.sendall(encode_request(request, fetches, "bench-wire"))
            size = int.from_bytes(reader.read(4), "big")
            _, response = decode_response(reader.read(size), request)
            data = response.responses[0].partitions[0]
            if data.error_code != 0:
                raise RuntimeError(f"Fetch at offset {offset} failed: {data.error_code}")
            count, offset = _count_records(data.records or b"", offset)
            messages += count
            record_bytes += len(data.records or b"")
        seconds = time.perf_counter() - start
    finally:
        sock.close()
    if messages != expected:
        raise RuntimeError(f"the wire client read {messages} records, expected {expected}")
    return WireRun(messages, fetches, seconds, messages / seconds, record_bytes)


def _count_records(records: bytes, offset: int) -> tuple[int, int]:
    """(records at or after `offset`, the offset after the last batch) from v2 batch headers only."""
    count = 0
    pos = 0
    while pos + 61 <= len(records):
        base = int.from_bytes(records[pos : pos + 8], "big", signed=True)
        length = int.from_bytes(records[pos + 8 : pos + 12], "big")
        last = base + int.from_bytes(records[pos + 23 : pos + 27], "big")
        if last >= offset:
            count += int.from_bytes(records[pos + 57 : pos + 61], "big")
            offset = last + 1
        pos += 12 + length
    return count, offset


class _Reader:
    """Exact reads from a socket, in large recv() calls (a frame's length and its body come together)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buf = bytearray()

    def read(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self._sock.recv(max(n - len(self._buf), _READ_CHUNK))
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out
