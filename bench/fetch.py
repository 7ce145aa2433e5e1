"""Fetch throughput: kcat reads a topic end to end through the broker; a raw XRANGE loop is the baseline."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

XRANGE_COUNT = 1000
# With -e, librdkafka only sees the end of a partition when a fetch at the high watermark returns, and the
# broker holds that empty fetch for fetch.wait.max.ms (500 ms by default) as Kafka does. That idle wait is not
# fetch throughput, so kcat gets a short one; fetches that find records return at once whatever this is.
KCAT_FETCH_WAIT_MS = 10
_READ_CHUNK = 1 << 16


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
