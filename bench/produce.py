"""Produce throughput: confluent-kafka against the broker; redis-benchmark XADD is the baseline."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

VALUE_SIZE = 100
PRODUCER_CONFIG: dict[str, str | int] = {
    "acks": 1,
    "linger.ms": 5,
    "batch.num.messages": 10000,
    "compression.type": "none",
    "message.timeout.ms": 60000,  # fail rather than wait five minutes when the broker is gone
    "log.connection.close": False,
}
BUFFER_WAIT_SECONDS = 60.0
RAW_STREAM_KEY = "benchstream"


def bench_value(size: int = VALUE_SIZE) -> bytes:
    return (b"0123456789abcdef" * (size // 16 + 1))[:size]


@dataclass(frozen=True, slots=True)
class ProduceRun:
    messages: int
    seconds: float  # first produce() to the end of the final flush()
    enqueue_seconds: float  # first produce() to the return of the last produce(): the client's own cost
    msgs_per_s: float


def make_producer(bootstrap: str, **settings: str) -> Producer:
    """The suite's producer; `settings` adds client settings (security, for one)."""
    return Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, **settings})


def close_producer(producer: Producer, failed: bool) -> None:
    """Closes the client; after a failure its queued messages are dropped first, so closing cannot hang."""
    if failed:
        producer.purge()
    close = getattr(producer, "close", None)  # confluent-kafka >= 2.10
    if close is not None:
        close()


def warm_up(producer: Producer, topic: str) -> None:
    """Creates the topic (Metadata auto-creation) and opens the connection to its leader."""
    metadata = producer.list_topics(topic, timeout=15)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or 0 not in found.partitions:
        raise RuntimeError(f"topic {topic} was not created: {found.error if found else 'missing'}")


def create_topics(bootstrap: str, topics: list[str], config: dict[str, str]) -> None:
    """Creates one-partition topics with these configs (CreateTopics), rather than by auto-creation."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, 1, 1, config=config) for t in topics], operation_timeout=15)
    for future in futures.values():
        future.result(30)


def produce_topic(producer: Producer, topic: str, messages: int, value: bytes) -> ProduceRun:
    """Sends `messages` copies of `value` to partition 0 of `topic` and waits for every acknowledgement."""
    produce = producer.produce
    start = time.perf_counter()
    for _ in range(messages):
        try:
            produce(topic, value, partition=0)
        except BufferError:  # the client's queue is full: serve delivery reports and try again
            deadline = time.perf_counter() + BUFFER_WAIT_SECONDS
            while True:
                producer.poll(0.005)
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"the producer queue was full for {BUFFER_WAIT_SECONDS} s") from None
                try:
                    produce(topic, value, partition=0)
                    break
                except BufferError:
                    continue
    enqueued = time.perf_counter()
    remaining = producer.flush(120)
    end = time.perf_counter()
    if remaining:
        raise RuntimeError(f"{remaining} messages were still unacknowledged after 120 s")
    seconds = end - start
    return ProduceRun(messages, seconds, enqueued - start, messages / seconds)


_RPS = re.compile(rb"([0-9]+(?:\.[0-9]+)?) requests per second")


def redis_benchmark_xadd(redis_url: str, requests: int, value: bytes, pipeline: int = 64) -> float:
    """`redis-benchmark -P 64 -n N -q XADD benchstream * f VALUE`: requests (= entries) per second."""
    url = urlsplit(redis_url)
    auth = ["-a", unquote(url.password)] if url.password else []  # its -u takes no password alone
    if url.username and url.password:
        auth += ["--user", unquote(url.username)]
    args = [
        "redis-benchmark", "-h", url.hostname or "127.0.0.1", "-p", str(url.port or 6379), *auth,
        "-P", str(pipeline), "-n", str(requests), "-q",
        "XADD", RAW_STREAM_KEY, "*", "f", value.decode("ascii"),
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, timeout=300, check=False)
    if done.returncode != 0:
        error = done.stderr.decode(errors="replace")
        raise RuntimeError(f"redis-benchmark failed ({done.returncode}): {error}")
    found = _RPS.findall(done.stdout)
    if not found:
        raise RuntimeError(f"cannot parse redis-benchmark output: {done.stdout[-300:]!r}")
    return float(found[-1])
