"""One run of each figure against one broker: the same client, settings and records whichever broker it is.
Every run checks that its records all arrived (end offsets, or the reader's count) before it counts."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from types import TracebackType

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

import apache_kafka

from .. import fetch, latency, produce
from .brokers import Broker

VALUE = produce.bench_value()
# Kafka's own clients get the suite's producer settings where the two clients share them (bench/produce.py);
# the rest stays at the Java client's defaults (batch.size 16 KiB among them).
JAVA_PRODUCER_SETTINGS = ("acks=1", "linger.ms=5", "compression.type=none")
TOOL_TIMEOUT_SECONDS = 300.0
CONSUME_TIMEOUT_SECONDS = 120.0
CREATE_TIMEOUT_MS = 300_000


@dataclass(slots=True)
class Meter:
    """The broker's CPU seconds (all its processes) and the wall seconds spent inside the `with`."""

    broker: Broker
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    _start: tuple[float, float] = field(default=(0.0, 0.0), repr=False)

    def __enter__(self) -> Meter:
        self._start = (self.broker.cpu_seconds(), time.perf_counter())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.wall_seconds = time.perf_counter() - self._start[1]
        self.cpu_seconds = self.broker.cpu_seconds() - self._start[0]


@dataclass(frozen=True, slots=True)
class Measured:
    figures: dict[str, float]  # msgs_per_s, p99_ms, seconds, ...
    records: int  # records the run moved (0: none, as in creating a topic)
    cpu_seconds: float  # the broker's processes, over the timed part of the run
    wall_seconds: float

    @property
    def cpu_us_per_record(self) -> float:
        return self.cpu_seconds / self.records * 1e6 if self.records else float("nan")


def _measured(meter: Meter, records: int, **figures: float) -> Measured:
    return Measured(figures, records, meter.cpu_seconds, meter.wall_seconds)


def _admin(broker: Broker) -> AdminClient:
    # log_level 4: not its notice, when it is closed, of the answers already taken.
    return AdminClient({"bootstrap.servers": broker.bootstrap, "log.connection.close": False, "log_level": 4})


def create_topic(broker: Broker, topic: str, partitions: int = 1, timeout: float = 120.0) -> None:
    """CreateTopics, then Metadata until every partition has a leader: Kafka's broker learns of a new
    topic from its controller a moment after the controller has answered."""
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=timeout)[topic].result(timeout)
    deadline = time.monotonic() + timeout
    while True:
        found = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            found is not None
            and found.error is None
            and len(found.partitions) == partitions
            and all(p.leader >= 0 and p.error is None for p in found.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{broker.name}: {topic} has no leader for every partition after {timeout} s")
        time.sleep(0.02)


def end_offsets(broker: Broker, topic: str, partitions: int = 1) -> int:
    """The sum of the partitions' end offsets (ListOffsets, latest)."""
    wanted = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    admin = _admin(broker)  # held until the answers are in: a client that goes away drops its futures
    futures = admin.list_offsets(wanted, request_timeout=60)
    return sum(future.result(60).offset for future in futures.values())


def _check_stored(broker: Broker, topic: str, expected: int, partitions: int = 1) -> None:
    stored = end_offsets(broker, topic, partitions)
    if stored != expected:
        raise RuntimeError(f"{broker.name}: {topic} ends at {stored} records; {expected} were sent")


def produce_confluent(broker: Broker, topic: str, records: int) -> Measured:
    """The suite's producer (bench/produce.py) to a new one-partition topic."""
    create_topic(broker, topic)
    producer = produce.make_producer(broker.bootstrap)
    failed = True
    try:
        produce.warm_up(producer, topic)
        with Meter(broker) as meter:
            run = produce.produce_topic(producer, topic, records, VALUE)
        failed = False
    finally:
        produce.close_producer(producer, failed)
    _check_stored(broker, topic, records)
    return _measured(meter, records, msgs_per_s=run.msgs_per_s)


def fetch_kcat(broker: Broker, topic: str, records: int, partition: int | None = 0) -> Measured:
    """kcat from the beginning to the end of one partition (None: of every partition), as the suite does."""
    with Meter(broker) as meter:
        run = fetch.kcat_consume(broker.bootstrap, topic, records, partition=partition)
    return _measured(meter, records, msgs_per_s=run.msgs_per_s)


def fetch_confluent(broker: Broker, topic: str, records: int) -> Measured:
    """A confluent-kafka Consumer assigned partition 0 from the beginning (no group joined), at the client's
    defaults, consume()ing batches until it has every record: assign to the last record."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench-versus-kafka",
                         "enable.auto.commit": False, "log.connection.close": False})  # fmt: skip
    got = 0
    try:
        with Meter(broker) as meter:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            deadline = time.monotonic() + CONSUME_TIMEOUT_SECONDS
            while got < records:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{broker.name}: the consumer read {got} of {records} records")
                # consume() waits for as many as it asks for: never more than are still to come.
                for message in consumer.consume(min(10_000, records - got), 1.0):
                    error = message.error()
                    if error is None:
                        got += 1
                    elif error.code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(f"{broker.name}: the consumer failed: {error}")
    finally:
        consumer.close()
    if got != records:
        raise RuntimeError(f"{broker.name}: the consumer read {got} records, expected {records}")
    return _measured(meter, records, msgs_per_s=records / meter.wall_seconds)


def _tool(name: str, *args: str) -> str:
    done = apache_kafka.run_tool(name, *args, timeout=TOOL_TIMEOUT_SECONDS)
    if done.returncode != 0:
        raise RuntimeError(f"{name} exited with {done.returncode}: {done.stderr[-1500:]}")
    return done.stdout


# ProducerPerformance's last line: "N records sent, R records/sec (M MB/sec), ... 99.9th."
_PRODUCER_SUMMARY = re.compile(r"^(\d+) records sent, ([0-9.]+) records/sec .*99\.9th\.$", re.MULTILINE)


def parse_producer_performance(output: str) -> tuple[int, float]:
    """(records sent, records/s) of ProducerPerformance's summary line."""
    found = _PRODUCER_SUMMARY.findall(output)
    if not found:
        raise RuntimeError(f"no summary line in ProducerPerformance's output: {output[-500:]!r}")
    sent, rate = found[-1]
    return int(sent), float(rate)


def parse_consumer_performance(output: str) -> dict[str, str]:
    """ConsumerPerformance's summary: its header line's names and the next line's values."""
    lines = [line.strip() for line in output.splitlines()]
    for n, line in enumerate(lines[:-1]):
        if line.startswith("start.time,"):
            names = [x.strip() for x in line.split(",")]
            values = [x.strip() for x in lines[n + 1].split(",")]
            if len(names) == len(values):
                return dict(zip(names, values, strict=True))
    raise RuntimeError(f"no summary in ConsumerPerformance's output: {output[-500:]!r}")


def produce_perf_tool(broker: Broker, topic: str, records: int) -> Measured:
    """kafka-producer-perf-test (ProducerPerformance): its own records/s, from its first send to its last
    acknowledgement; the meter also spans the tool's JVM start, when the broker is idle."""
    create_topic(broker, topic)
    with Meter(broker) as meter:
        output = _tool(
            "kafka-producer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic,
            "--num-records", str(records), "--record-size", str(produce.VALUE_SIZE), "--throughput", "-1",
            "--command-property", *JAVA_PRODUCER_SETTINGS,
        )  # fmt: skip
    sent, rate = parse_producer_performance(output)
    if sent != records:
        raise RuntimeError(f"{broker.name}: ProducerPerformance sent {sent} records, not {records}")
    _check_stored(broker, topic, records)
    return _measured(meter, records, msgs_per_s=rate)


def fetch_perf_tool(broker: Broker, topic: str, records: int, group: str) -> Measured:
    """kafka-consumer-perf-test (ConsumerPerformance) in a new group: its fetch.nMsg.sec, which leaves out
    the group's join (rebalance.time.ms, kept beside it as join_ms)."""
    with Meter(broker) as meter:
        output = _tool(
            "kafka-consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic,
            "--num-records", str(records), "--group", group, "--timeout", "60000",
        )  # fmt: skip
    summary = parse_consumer_performance(output)
    if int(summary["data.consumed.in.nMsg"]) != records:
        raise RuntimeError(f"{broker.name}: ConsumerPerformance read {summary['data.consumed.in.nMsg']}")
    return _measured(
        meter,
        records,
        msgs_per_s=float(summary["fetch.nMsg.sec"]),
        join_ms=float(summary["rebalance.time.ms"]),
    )


def create_many(broker: Broker, topic: str, partitions: int) -> Measured:
    """A topic of `partitions` partitions, from CreateTopics until every partition has taken a record (one
    each, acknowledged): Kafka names a partition's leader in Metadata before that leader has made its log,
    and a produce meanwhile waits."""
    # A broker that takes its time over making the partitions must not fail their records.
    producer = produce.make_producer(broker.bootstrap, **{"message.timeout.ms": str(CREATE_TIMEOUT_MS)})
    failed = True
    try:
        with Meter(broker) as meter:
            create_topic(broker, topic, partitions)
            _send_spread(producer, topic, partitions, partitions)
        failed = False
    finally:
        produce.close_producer(producer, failed)
    _check_stored(broker, topic, partitions, partitions)
    return _measured(meter, 0, seconds=meter.wall_seconds)


def produce_many(broker: Broker, topic: str, partitions: int, records: int, stored: int) -> Measured:
    """The suite's producer, record i to partition i % partitions of a topic create_many made, which holds
    `stored` records already: at its linger.ms 5 each partition's batches hold a few records, so the
    broker's cost per partition shows."""
    producer = produce.make_producer(broker.bootstrap)
    failed = True
    try:
        produce.warm_up(producer, topic)
        with Meter(broker) as meter:
            _send_spread(producer, topic, partitions, records)
        failed = False
    finally:
        produce.close_producer(producer, failed)
    _check_stored(broker, topic, stored + records, partitions)
    return _measured(meter, records, msgs_per_s=records / meter.wall_seconds)


def _send_spread(producer: Producer, topic: str, partitions: int, records: int) -> None:
    send = producer.produce
    for i in range(records):
        while True:
            try:
                send(topic, VALUE, partition=i % partitions)
                break
            except BufferError:  # the client's queue is full: serve its delivery reports, then again
                producer.poll(0.005)
    # Failed records leave the queue too: the callers count what the partitions hold.
    if producer.flush(CREATE_TIMEOUT_MS / 1000):
        raise RuntimeError(f"records to {topic} were still unacknowledged after {CREATE_TIMEOUT_MS} ms")


def end_to_end(broker: Broker, topic: str, rate: int, seconds: float, linger_ms: int) -> Measured:
    """bench/latency.py's paced producer and consumer at the log end, on an existing topic."""
    with Meter(broker) as meter:
        run = latency.end_to_end_latency(broker.bootstrap, topic, rate, seconds, linger_ms)
    if run.received != run.sent:
        raise RuntimeError(f"{broker.name}: {run.received} of {run.sent} timed messages were received")
    return _measured(
        meter,
        run.sent,
        p50_ms=run.p50_ms,
        p99_ms=run.p99_ms,
        max_ms=run.max_ms,
        sent_msgs_per_s=run.sent_msgs_per_s,
    )
