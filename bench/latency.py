"""End-to-end latency: a producer at a steady rate, a consumer at the log end, receive minus send time.

Each run also times the produce acknowledgement (the delivery report's time minus the send time), which
splits a message's latency into the producer's part (its linger, then the Produce round trip) and the rest
(the broker's wake-up of the parked Fetch, the Fetch response, the consumer's hand-over to poll()).

`python -m bench.latency` starts its own servers and runs each producer setting several times, taking turns,
and prints the medians (see docs/benchmarks.md, "End-to-end latency").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import socket
import statistics
import struct
import sys
import threading
import time
import timeit
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, Message, Producer, TopicPartition

from .produce import VALUE_SIZE, close_producer
from .servers import BenchServers, CpuMeter, Endpoints

MARK = b"L"  # values of the timed messages: MARK, send time in ns (20 digits), padding
# The producer's settings besides the client's defaults and its linger.ms (set per run: LINGERS).
PRODUCER_CONFIG: dict[str, str | int] = {
    "acks": 1,
    "compression.type": "none",
    "message.timeout.ms": 30000,
    "log.connection.close": False,
}
# linger.ms per row (docs/benchmarks.md, "End-to-end latency"). The target row is linger.ms 1: at 5k msg/s
# it sends about 5 records per Produce request. linger.ms 0 sends one request per record, whose per-request
# cost (client and broker) outweighs the millisecond saved; None keeps the client's default (5 ms in
# librdkafka 2.x), which holds each record up to 5 ms.
TARGET_LINGER_MS = 1
LINGERS: tuple[int | None, ...] = (TARGET_LINGER_MS, 0, None)
CLIENT_DEFAULT_LINGER_MS = 5
# p99 targets (issue 30) per rate; the high rate's row is linger.ms 1 alone.
P99_TARGET_MS = 2.0
HIGH_RATE = 50_000
HIGH_RATE_P99_TARGET_MS = 5.0
ROUNDS = 3  # runs per linger.ms, taking turns; the table shows the medians
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
    linger_ms: int | None  # None: the client's default
    sent: int
    received: int
    send_seconds: float
    sent_msgs_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    acked_p50_ms: float  # send to delivery report: the producer's linger plus the Produce round trip
    acked_p99_ms: float
    after_ack_p50_ms: float  # delivery report to receive, per message (may be < 0: the two race)
    after_ack_p99_ms: float
    over_100ms: int  # messages slower than 100 ms
    slow_sent_at_s: list[float]  # when the first of those were sent, in seconds from the first timed send
    # The producer's own account (librdkafka's statistics, medians over its windows of the timed run;
    # nan when none fell in it): how long a record waits in the client before its Produce request is
    # made (linger included), and the Produce round trip the client sees.
    client_queue_p50_ms: float
    client_queue_p99_ms: float
    produce_rtt_p50_ms: float
    produce_rtt_p99_ms: float


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def _value(now_ns: int) -> bytes:
    return (MARK + b"%020d" % now_ns).ljust(VALUE_SIZE, b".")


def producer_config(linger_ms: int | None) -> dict[str, str | int]:
    config = dict(PRODUCER_CONFIG)
    if linger_ms is not None:
        config["linger.ms"] = linger_ms
    return config


class _Receiver(threading.Thread):
    def __init__(self, consumer: Consumer) -> None:
        super().__init__(name="bench-latency-consumer", daemon=True)
        self.consumer = consumer
        self.samples: dict[int, tuple[int, int]] = {}  # offset: (send time, receive time), in ns
        self.errors: list[str] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        # The first message waits in poll(); what else the client has fetched by then is taken in one
        # consume() that does not wait, so the client's per-message Python work competes less with the
        # broker for the CPUs. Each message is timed as it is handed over.
        poll, consume = self.consumer.poll, self.consumer.consume
        out = self.samples
        while not self.stop_event.is_set():
            first = poll(0.05)
            if first is None:
                continue
            received = time.time_ns()
            messages = [first, *consume(10_000, 0)]
            for message in messages:
                if message.error():
                    self.errors.append(str(message.error()))
                    continue
                value = message.value()
                if value and value[:1] == MARK:
                    out[message.offset()] = (int(value[1:21]), received)


class _Acks:
    """Delivery reports (served by the sending thread's poll()): offset -> report time in ns."""

    def __init__(self) -> None:
        self.at: dict[int, int] = {}
        self.errors: list[str] = []

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        now = time.time_ns()
        if error is not None:
            self.errors.append(str(error))
            return
        offset = message.offset()
        if offset is not None:
            self.at[offset] = now


# How often the producer reports its statistics (client_queue_*, produce_rtt_* of LatencyRun).
STATISTICS_INTERVAL_MS = 500
# LatencyRun's fields from those statistics.
CLIENT_WINDOW_FIELDS = (
    "client_queue_p50_ms",
    "client_queue_p99_ms",
    "produce_rtt_p50_ms",
    "produce_rtt_p99_ms",
)


class _ClientWindows:
    """The producer's statistics windows (its stats_cb, served by poll() in the sending thread): per
    window, the broker's int_latency (produce() to the record's place in a Produce request, linger
    included) and rtt, in ms. Only windows that end after `start()` are kept."""

    def __init__(self) -> None:
        self.windows: list[dict[str, float]] = []
        self._keeping = False

    def start(self) -> None:
        self._keeping = True

    def __call__(self, stats_json: str) -> None:
        if not self._keeping:
            return
        for broker in json.loads(stats_json).get("brokers", {}).values():
            queue, rtt = broker.get("int_latency") or {}, broker.get("rtt") or {}
            if broker.get("nodeid", -1) >= 0 and queue.get("cnt", 0) > 0 and rtt.get("cnt", 0) > 0:
                self.windows.append(
                    {
                        "client_queue_p50_ms": queue["p50"] / 1000,
                        "client_queue_p99_ms": queue["p99"] / 1000,
                        "produce_rtt_p50_ms": rtt["p50"] / 1000,
                        "produce_rtt_p99_ms": rtt["p99"] / 1000,
                    }
                )

    def medians(self) -> dict[str, float]:
        if not self.windows:
            return dict.fromkeys(CLIENT_WINDOW_FIELDS, float("nan"))
        return {name: statistics.median(w[name] for w in self.windows) for name in CLIENT_WINDOW_FIELDS}


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


def end_to_end_latency(
    bootstrap: str,
    topic: str,
    rate: int = 5000,
    seconds: float = 5.0,
    linger_ms: int | None = TARGET_LINGER_MS,
) -> LatencyRun:
    windows = _ClientWindows()
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            **producer_config(linger_ms),
            "statistics.interval.ms": STATISTICS_INTERVAL_MS,
            "stats_cb": windows,
        }
    )
    failed = True
    try:
        metadata = producer.list_topics(topic, timeout=15)  # auto-creates the topic
        if topic not in metadata.topics or metadata.topics[topic].error is not None:
            raise RuntimeError(f"latency topic {topic} was not created")
        sent, send_seconds, start_ns, samples, acks = _run(producer, bootstrap, topic, rate, seconds, windows)
        failed = False
    finally:
        close_producer(producer, failed)
    ms = sorted((got - at) / 1e6 for at, got in samples.values())
    acked = sorted((acks[o] - at) / 1e6 for o, (at, _) in samples.items() if o in acks)
    after = sorted((got - acks[o]) / 1e6 for o, (_, got) in samples.items() if o in acks)
    slow = sorted(round((at - start_ns) / 1e9, 3) for at, got in samples.values() if got - at > 100_000_000)
    return LatencyRun(
        target_msgs_per_s=rate,
        linger_ms=linger_ms,
        sent=sent,
        received=len(ms),
        send_seconds=send_seconds,
        sent_msgs_per_s=sent / send_seconds,
        p50_ms=percentile(ms, 0.50),
        p99_ms=percentile(ms, 0.99),
        max_ms=ms[-1] if ms else float("nan"),
        mean_ms=sum(ms) / len(ms) if ms else float("nan"),
        acked_p50_ms=percentile(acked, 0.50),
        acked_p99_ms=percentile(acked, 0.99),
        after_ack_p50_ms=percentile(after, 0.50),
        after_ack_p99_ms=percentile(after, 0.99),
        over_100ms=len(slow),
        slow_sent_at_s=slow[:10],
        **windows.medians(),
    )


def _run(
    producer: Producer, bootstrap: str, topic: str, rate: int, seconds: float, windows: _ClientWindows
) -> tuple[int, float, int, dict[int, tuple[int, int]], dict[int, int]]:
    """Sends at `rate` for `seconds`; returns (sent, send seconds, start time in ns, samples, acks).
    The producer's statistics windows count from the first timed send."""
    consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG})
    consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
    receiver = _Receiver(consumer)
    acks = _Acks()
    try:
        _wait_live(producer, consumer, topic, timeout=15)
        receiver.start()
        total = int(rate * seconds)
        produce = producer.produce
        producer.poll(0)  # a window of the warm-up is served before the timed sends start
        windows.start()
        sent = 0
        start = time.perf_counter()
        start_ns = time.time_ns()
        while sent < total:
            due = min(total, int((time.perf_counter() - start) * rate) + 1)
            while sent < due:
                produce(topic, _value(time.time_ns()), partition=0, on_delivery=acks)
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
    if receiver.errors or acks.errors:
        raise RuntimeError(f"latency errors: consumer {receiver.errors[:3]}, producer {acks.errors[:3]}")
    return sent, send_seconds, start_ns, dict(receiver.samples), acks.at


def linger_label(linger_ms: int | None) -> str:
    if linger_ms is None:
        return f"linger.ms {CLIENT_DEFAULT_LINGER_MS} (client default)"
    return f"linger.ms {linger_ms}"


def summary(runs: list[LatencyRun]) -> dict[str, float]:
    """Medians over runs of one setting: p99 on a shared machine swings from run to run."""
    return {
        name: round(statistics.median(getattr(r, name) for r in runs), 2)
        for name in ("p50_ms", "p99_ms", "max_ms", "acked_p50_ms", "acked_p99_ms", "after_ack_p99_ms")
    } | {name: round(_median_known([getattr(r, name) for r in runs]), 3) for name in CLIENT_WINDOW_FIELDS}


def _median_known(values: list[float]) -> float:
    """The median of the values that are not nan (nan when none is)."""
    known = [v for v in values if not math.isnan(v)]
    return statistics.median(known) if known else float("nan")


# Where Linux takes a process's wish for CPU wake-up latency (PM QoS): 0 while the file is held open.
CPU_DMA_LATENCY = "/dev/cpu_dma_latency"


@contextlib.contextmanager
def idle_polling() -> Iterator[bool]:
    """Holds the host's CPU wake-up latency at 0 while inside (as tuned's latency-performance profile
    does), so idle CPUs poll rather than halt; yields whether the host took it (root, a cpuidle driver).
    On a VM a halted virtual CPU is woken through the hypervisor, which costs each hop of the latency
    path up to a millisecond when the host is busy; polling burns the idle CPUs instead."""
    try:
        fd = os.open(CPU_DMA_LATENCY, os.O_WRONLY)
    except OSError:
        yield False
        return
    try:
        os.write(fd, struct.pack("i", 0))
        yield True
    finally:
        os.close(fd)


def host_hiccups(seconds: float = 3.0, tick_s: float = 0.0002) -> dict[str, float]:
    """The host's own stalls, measured with nothing else running (as jHiccup does): a loop sleeping
    `tick_s` at a time, counting wake-ups later than asked by more than 1, 2 and 5 ms, per 10 s. A
    message delayed by such a stall is late whatever the broker does: at 5k msg/s one 10 ms stall a
    second delays a whole 1% of the messages."""
    over = {1: 0, 2: 0, 5: 0}
    worst = 0.0
    end = time.perf_counter() + seconds
    while (start := time.perf_counter()) < end:
        time.sleep(tick_s)
        late_ms = (time.perf_counter() - start - tick_s) * 1000
        worst = max(worst, late_ms)
        for ms in over:
            if late_ms > ms:
                over[ms] += 1
    per_10s = 10 / seconds
    return {
        "seconds": seconds,
        **{f"over_{ms}ms_per_10s": round(n * per_10s, 1) for ms, n in over.items()},
        "worst_ms": round(worst, 2),
    }


def run(
    ep: Endpoints,
    rate: int,
    seconds: float,
    rounds: int = ROUNDS,
    lingers: tuple[int | None, ...] = LINGERS,
    p99_target_ms: float = P99_TARGET_MS,
) -> dict[str, Any]:
    """Each linger.ms `rounds` times, taking turns, with the processes' CPU; medians per row. The top
    level holds the first row's medians (p50_ms, p99_ms, ...: the target row), as the report reads them.
    The host's own stalls and wake-up round trip are measured first, for the reader to weigh them."""
    hiccups = host_hiccups()
    trips = host_round_trips()
    python_us = python_reference_us()
    runs: dict[int | None, list[LatencyRun]] = {linger: [] for linger in lingers}
    cpu: dict[int | None, list[dict[str, float]]] = {linger: [] for linger in lingers}
    for n in range(rounds):
        for linger in lingers:
            meter = CpuMeter(ep)
            meter.start()
            done = end_to_end_latency(ep.bootstrap, f"bench-latency-{n}", rate, seconds, linger)
            cpu[linger].append(meter.stop())
            runs[linger].append(done)
            ms = f"{done.p50_ms:.2f}/{done.p99_ms:.2f}/{done.max_ms:.2f}"
            say(f"{linger_label(linger)}: p50/p99/max {ms} ms")
    rows = [
        {
            "linger_ms": linger,
            "label": linger_label(linger),
            **summary(runs[linger]),
            "received": sum(r.received for r in runs[linger]),
            "sent": sum(r.sent for r in runs[linger]),
            "cpu": {k: round(statistics.median(c[k] for c in cpu[linger]), 3) for k in CpuMeter.NAMES},
            "runs": [asdict(r) for r in runs[linger]],
        }
        for linger in lingers
    ]
    target = rows[0]
    return {
        "target_msgs_per_s": rate,
        "target_linger_ms": TARGET_LINGER_MS,
        "p99_target_ms": p99_target_ms,
        "rounds": rounds,
        **{k: target[k] for k in ("p50_ms", "p99_ms", "max_ms", "received", "sent", "cpu")},
        "producer_config": PRODUCER_CONFIG,
        "host_round_trip": trips,
        "host_python_us": python_us,
        "host_hiccups": hiccups,
        "rows": rows,
    }


def run_tuned(
    ep: Endpoints,
    rate: int,
    seconds: float,
    rounds: int = ROUNDS,
    lingers: tuple[int | None, ...] = LINGERS,
    p99_target_ms: float = P99_TARGET_MS,
) -> dict[str, Any] | None:
    """run() with idle CPUs polling (idle_polling); None when the host does not allow it."""
    with idle_polling() as held:
        if not held:
            return None
        return {**run(ep, rate, seconds, rounds, lingers, p99_target_ms), "host_tuning": "idle polling"}


def wakeup_round_trip_us(cpus: tuple[int, int] | None, trips: int = 5000) -> float:
    """The machine's own floor under every hop of the latency path: µs for one byte to go to a second
    process and back over a socket pair, that process pinned to cpus[1] and this one to cpus[0] (None:
    wherever the scheduler puts them). A process that sleeps waits for its CPU to wake it; on a VM whose
    idle virtual CPUs halt, that wake-up can cost far more than the send itself."""
    here, there = socket.socketpair()
    before = os.sched_getaffinity(0)
    pid = os.fork()
    if pid == 0:  # the echo
        try:
            here.close()
            if cpus is not None:
                os.sched_setaffinity(0, {cpus[1]})
            for _ in range(trips + 1):
                there.sendall(there.recv(1))
        finally:
            os._exit(0)
    there.close()
    try:
        if cpus is not None:
            os.sched_setaffinity(0, {cpus[0]})
        here.sendall(b"x")
        here.recv(1)  # the echo is running
        start = time.perf_counter()
        for _ in range(trips):
            here.sendall(b"x")
            here.recv(1)
        return (time.perf_counter() - start) / trips * 1e6
    finally:
        os.sched_setaffinity(0, before)
        here.close()
        os.waitpid(pid, 0)


def _reference_work() -> int:
    """A fixed piece of plain Python: calls, attribute and dict lookups, small objects, as a broker's
    request path is made of."""
    total = 0
    seen: dict[int, tuple[int, int]] = {}
    for i in range(2000):
        pair = divmod(i, 7)
        seen[i & 63] = pair
        total += len(str(pair[0])) + seen[i & 63][1]
    return total


def python_reference_us(repeats: int = 5, number: int = 200) -> float:
    """µs for _reference_work on this host now, best of `repeats`. About three quarters of the broker's
    CPU per request is the interpreter (perf), so its latency and CPU figures move with this one from
    host to host and day to day, as the wake-up round trip and the stalls do."""
    best = min(timeit.repeat(_reference_work, repeat=repeats, number=number))
    return round(best / number * 1e6, 1)


def host_round_trips() -> dict[str, float]:
    """wakeup_round_trip_us across two CPUs and on one (the latter alone on a 1-CPU machine)."""
    cpus = sorted(os.sched_getaffinity(0))
    out = {"same_cpu_us": round(wakeup_round_trip_us((cpus[0], cpus[0])), 1)}
    if len(cpus) > 1:
        out["cross_cpu_us"] = round(wakeup_round_trip_us((cpus[0], cpus[1])), 1)
    return out


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description="end-to-end latency, each linger.ms in turn")
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--linger", type=int, action="append", help="linger.ms to run (-1: client default)")
    parser.add_argument(
        "--idle-polling", action="store_true", help=f"hold {CPU_DMA_LATENCY} at 0: idle CPUs poll (root)"
    )
    args = parser.parse_args()
    lingers = tuple(None if v < 0 else v for v in args.linger) if args.linger else LINGERS
    with BenchServers() as ep:
        if args.idle_polling:
            tuned = run_tuned(ep, args.rate, args.seconds, args.rounds, lingers)
            if tuned is None:
                say(f"cannot hold {CPU_DMA_LATENCY} (root and a cpuidle driver are needed)")
                return 1
            results = tuned
        else:
            results = run(ep, args.rate, args.seconds, args.rounds, lingers)
    for row in results["rows"]:
        figures = {k: row[k] for k in ("p50_ms", "p99_ms", "max_ms", "acked_p50_ms", "acked_p99_ms")}
        cpu = row["cpu"]
        us = {k: round(cpu[k] / args.rate * 1e6, 1) for k in ("broker", "redis", "client")}
        print(f"{row['label']}: median of {args.rounds}: {figures}; CPU µs per message {us}")
        client = {k: row[k] for k in row if k.startswith(("client_queue_", "produce_rtt_"))}
        print(f"  the producer's own account (librdkafka statistics): {client}")
    print(f"host: a process's wake-up round trip {results['host_round_trip']} µs")
    print(f"host: stalls of an idle sleeping loop {results['host_hiccups']}")
    print(f"host: a fixed piece of plain Python took {results['host_python_us']} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
