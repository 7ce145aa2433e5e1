"""Produce throughput: confluent-kafka against the broker; redis-benchmark XADD is the baseline."""

from __future__ import annotations

import datetime
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from aiokafka.record._crecords import DefaultRecordBatchBuilder
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from schooner.protocol.client import decode_response, encode_request

from .fetch import _Reader

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


# The wire producer's batches: librdkafka's batch.size (1 MB) holds about 9,000 records of 100 B; 2,000
# is what its linger.ms=5 gathers at this rate. Five requests in flight, as an idempotent librdkafka keeps.
WIRE_BATCH_RECORDS = 2_000
WIRE_IN_FLIGHT = 5


def produce_frame(
    topic: str, batch: bytes, correlation_id: int, client_id: str
) -> tuple[ProduceRequest, bytes]:
    """A Produce v9 request (acks=1) of one record batch to partition 0, and its encoded frame."""
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=0, records=batch),)),
        ),
    )
    return request, encode_request(request, correlation_id, client_id)


def wire_frames(topic: str, messages: int, value: bytes) -> list[tuple[ProduceRequest, bytes]]:
    """Produce requests of uncompressed batches of WIRE_BATCH_RECORDS records, encoded before the clock
    starts: the wire producer then only writes bytes and reads answers."""
    stamp = int(time.time() * 1000)
    out = []
    for n, start in enumerate(range(0, messages, WIRE_BATCH_RECORDS), 1):
        builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 2**31 - 1)
        for i in range(min(WIRE_BATCH_RECORDS, messages - start)):
            builder.append(i, stamp, None, value, [])
        out.append(produce_frame(topic, bytes(builder.build()), n, "bench-wire-producer"))
    return out


def wire_produce(
    bootstrap: str, frames: list[tuple[ProduceRequest, bytes]], messages: int, in_flight: int = WIRE_IN_FLIGHT
) -> ProduceRun:
    """Sends the prebuilt requests over one connection, in_flight at a time, and reads every answer: a
    producer with no work per record, so the figure is the broker's and Redis's (its own CPU is in the
    run's `client` share)."""
    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = _Reader(sock)
        start = time.perf_counter()
        sent = answered = 0
        while answered < len(frames):
            while sent < len(frames) and sent - answered < in_flight:
                sock.sendall(frames[sent][1])
                sent += 1
            size = int.from_bytes(reader.read(4), "big")
            _, response = decode_response(reader.read(size), frames[answered][0])
            code = response.responses[0].partition_responses[0].error_code
            if code != 0:
                raise RuntimeError(f"Produce failed with error {code}")
            answered += 1
        seconds = time.perf_counter() - start
    return ProduceRun(messages, seconds, 0.0, messages / seconds)


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
