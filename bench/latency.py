"""End-to-end latency: a producer at a steady rate, a consumer at the log end, receive minus send time."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

from .produce import VALUE_SIZE, close_producer

MARK = b"L"  # values of the timed messages: MARK, send time in ns (20 digits), padding
# The producer's settings besides the client's defaults (linger.ms is 5 ms by default in librdkafka 2.x).
PRODUCER_CONFIG: dict[str, str | int] = {
    "acks": 1,
    "compression.type": "none",
    "message.timeout.ms": 30000,
    "log.connection.close": False,
}
# fetch.wait.max.ms stays at the client's default (500 ms): the broker must wake the long-poll on append.
CONSUMER_CONFIG: dict[str, str | int | bool] = {
    "group.id": "schooner-bench-latency",  # required by the client; no group is joined (assign, no commits)
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "log.connection.close": False,
}


@dataclass(frozen=True, slots=True)
class LatencyRun:
    target_msgs_per_s: int
    sent: int
    received: int
    send_seconds: float
    sent_msgs_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    over_100ms: int  # messages slower than 100 ms
    slow_sent_at_s: list[float]  # when the first of those were sent, in seconds from the first timed send


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def _value(now_ns: int) -> bytes:
    return (MARK + b"%020d" % now_ns).ljust(VALUE_SIZE, b".")


class _Receiver(threading.Thread):
    def __init__(self, consumer: Consumer) -> None:
        super().__init__(name="bench-latency-consumer", daemon=True)
        self.consumer = consumer
        self.samples: list[tuple[int, int]] = []  # (send time, receive time - send time), in ns
        self.errors: list[str] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        poll = self.consumer.poll
        out = self.samples
        while not self.stop_event.is_set():
            message = poll(0.05)
            if message is None:
                continue
            received = time.time_ns()
            if message.error():
                self.errors.append(str(message.error()))
                continue
            value = message.value()
            if value and value[:1] == MARK:
                sent = int(value[1:21])
                out.append((sent, received - sent))


def _wait_live(producer: Producer, consumer: Consumer, topic: str, timeout: float) -> None:
    """Sends untimed messages until the consumer (assigned at the end) gets one: its fetches are running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        producer.produce(topic, b"warm-up", partition=0)
        producer.flush(5)
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            while consumer.poll(0.05) is not None:  # drain the other warm-up messages
                pass
            return
    raise RuntimeError("the latency consumer, assigned at the end of the partition, received nothing")


def end_to_end_latency(bootstrap: str, topic: str, rate: int = 5000, seconds: float = 5.0) -> LatencyRun:
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    failed = True
    try:
        metadata = producer.list_topics(topic, timeout=15)  # auto-creates the topic
        if topic not in metadata.topics or metadata.topics[topic].error is not None:
            raise RuntimeError(f"latency topic {topic} was not created")
        sent, send_seconds, start_ns, samples = _run(producer, bootstrap, topic, rate, seconds)
        failed = False
    finally:
        close_producer(producer, failed)
    ms = sorted(ns / 1e6 for _, ns in samples)
    slow = [round((at - start_ns) / 1e9, 3) for at, ns in samples if ns > 100_000_000]
    return LatencyRun(
        target_msgs_per_s=rate,
        sent=sent,
        received=len(ms),
        send_seconds=send_seconds,
        sent_msgs_per_s=sent / send_seconds,
        p50_ms=percentile(ms, 0.50),
        p99_ms=percentile(ms, 0.99),
        max_ms=ms[-1] if ms else float("nan"),
        mean_ms=sum(ms) / len(ms) if ms else float("nan"),
        over_100ms=len(slow),
        slow_sent_at_s=slow[:10],
    )


def _run(
    producer: Producer, bootstrap: str, topic: str, rate: int, seconds: float
) -> tuple[int, float, int, list[tuple[int, int]]]:
    """Sends at `rate` for `seconds`; returns (sent, send seconds, start time in ns, samples)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG})
    consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
    receiver = _Receiver(consumer)
    try:
        _wait_live(producer, consumer, topic, timeout=15)
        receiver.start()
        total = int(rate * seconds)
        produce = producer.produce
        sent = 0
        start = time.perf_counter()
        start_ns = time.time_ns()
        while sent < total:
            due = min(total, int((time.perf_counter() - start) * rate) + 1)
            while sent < due:
                produce(topic, _value(time.time_ns()), partition=0)
                sent += 1
            producer.poll(0)
            pause = start + sent / rate - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
        send_seconds = time.perf_counter() - start
        if producer.flush(30):
            raise RuntimeError("latency producer: messages still unacknowledged after 30 s")
        deadline = time.monotonic() + 15
        while len(receiver.samples) < sent and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        receiver.stop_event.set()
        if receiver.is_alive():
            receiver.join(5)
        consumer.close()
    if receiver.errors:
        raise RuntimeError(f"latency consumer errors: {receiver.errors[:3]}")
    return sent, send_seconds, start_ns, list(receiver.samples)
