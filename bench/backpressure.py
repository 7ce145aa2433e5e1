"""A tiered topic through a Redis ten times smaller than its data, against the same produce with room.

Its own redis-server and broker (the cold store in a temporary folder, an archive pass every second, as
a user would run it). Each run produces `messages` records of 250 bytes with keys (four partitions)
from one idempotent acks=all confluent-kafka producer (linger.ms 10, every other setting its default)
twice, the two taking turns at going first:
- `tiered`: remote.storage.enable, local.retention.bytes 1 MiB, on a Redis whose maxmemory is a tenth
  of the values' bytes (never below MIN_MAXMEMORY): the producer outruns the archiver, is throttled as
  Redis nears the broker's high-water mark (broker/memory.py), and waits while it is at it;
- `room`: an untiered topic on the same Redis with maxmemory 0 (no limit).
The rate of each is records over the seconds from the first produce() to the last acknowledgement; the
ratio is the tiered run's median over the other's (goal >= 0.8). Beside it: the archiver's records/s
over the tiered run, failed deliveries (none is the goal), the fullest Redis was (as it counts for
maxmemory), the throttle callbacks the producer saw, and the CPU each run's records cost the broker,
redis-server and the client together. Topics are deleted after each run.
`python -m bench.backpressure [MESSAGES [RUNS]]` runs it alone.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.storage.keys import Keyspace

from .servers import client_cpu_seconds, process_cpu_seconds
from .tiering import TieredBroker, start_tiered_broker

MESSAGES = 1_000_000
RUNS = 3
VALUE = b"v" * 250
PARTITIONS = 4
MIN_MAXMEMORY = 16 * 1024 * 1024  # Redis itself uses a few MB
KEYSPACE = "bench-backpressure"
FLUSH_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class ProduceRun:
    seconds: float
    failed: int
    throttled: int  # throttle callbacks (KIP-219 throttle_time_ms > 0) the producer reported
    archived: int  # records the archiver had archived when the last one was acknowledged
    peak_fill: float  # the highest used memory / maxmemory seen (0 without a limit)
    cpu_us: float  # CPU of the broker, redis-server and this client per record (microseconds)


def _cpu_seconds(broker: TieredBroker) -> float:
    """CPU so far of the broker, its redis-server and this client."""
    return (
        process_cpu_seconds(broker.broker_pid) + process_cpu_seconds(broker.redis_pid) + client_cpu_seconds()
    )


def _fill(client: redis.Redis) -> float:
    info = client.info("memory")
    limit = int(info["maxmemory"])
    used = int(info["used_memory"]) - int(info.get("mem_not_counted_for_evict", 0))
    return used / limit if limit else 0.0


def _wait_freed(client: redis.Redis, below: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while int(client.info("memory")["used_memory"]) > below:
        if time.monotonic() > deadline:
            raise RuntimeError(f"Redis still uses more than {below} bytes after {timeout:.0f} s")
        time.sleep(0.1)


def _archived(client: redis.Redis, ks: Keyspace, topic: str) -> int:
    ends = [client.hget(ks.partition_state(topic, p), "archived_end") for p in range(PARTITIONS)]
    return sum(int(e) for e in ends if e)


def produce(broker: TieredBroker, topic: str, messages: int, configs: dict[str, str]) -> ProduceRun:
    bootstrap, client = broker.bootstrap, broker.client
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=configs)])[topic].result(30)
    failed, throttled, peak = [0], [0], [0.0]
    watching = threading.Event()

    def watch() -> None:
        while not watching.wait(0.05):
            peak[0] = max(peak[0], _fill(client))

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed[0] += 1

    def on_throttle(_event: Any) -> None:
        throttled[0] += 1

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 10,
            "throttle_cb": on_throttle,
        }
    )
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    began, cpu = time.perf_counter(), _cpu_seconds(broker)
    for i in range(messages):
        while True:
            try:
                producer.produce(topic, VALUE, b"%d" % i, on_delivery=delivered)
                break
            except BufferError:  # the client's queue is full: serve delivery reports and try again
                producer.poll(0.01)
    left = producer.flush(FLUSH_TIMEOUT_S)
    seconds = time.perf_counter() - began
    cpu_us = (_cpu_seconds(broker) - cpu) / messages * 1e6
    archived = _archived(client, Keyspace(KEYSPACE), topic)
    watching.set()
    watcher.join()
    if left:
        raise RuntimeError(f"{left} records unacknowledged after {FLUSH_TIMEOUT_S:.0f} s")
    admin.delete_topics([topic])[topic].result(30)
    return ProduceRun(seconds, failed[0], throttled[0], archived, peak[0], cpu_us)


def run(messages: int = MESSAGES, runs: int = RUNS, maxmemory: int | None = None) -> dict[str, Any]:
    """maxmemory: the tiered run's Redis limit; a tenth of the values' bytes by default."""
    limit = maxmemory or max(messages * len(VALUE) // 10, MIN_MAXMEMORY)
    tiered: list[ProduceRun] = []
    room: list[ProduceRun] = []
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-bench-backpressure-")))
        broker = start_tiered_broker(stack, folder, KEYSPACE, archive_interval_ms=1000)
        client = broker.client
        for i in range(runs):

            def tiered_run(i: int = i) -> None:
                _wait_freed(client, limit // 2)  # a deleted topic's keys are freed in the background
                client.config_set("maxmemory", limit)
                configs = {"remote.storage.enable": "true", "local.retention.bytes": str(1 << 20)}
                tiered.append(produce(broker, f"tiered-{i}", messages, configs))

            def room_run(i: int = i) -> None:
                client.config_set("maxmemory", 0)
                room.append(produce(broker, f"room-{i}", messages, {}))

            for step in (tiered_run, room_run) if i % 2 == 0 else (room_run, tiered_run):
                step()
    tiered_rate = statistics.median(messages / r.seconds for r in tiered)
    room_rate = statistics.median(messages / r.seconds for r in room)
    return {
        "backpressure_messages": messages,
        "backpressure_data_bytes": messages * len(VALUE),
        "backpressure_maxmemory": limit,
        "backpressure_tiered_msgs_per_s": round(tiered_rate),
        "backpressure_room_msgs_per_s": round(room_rate),
        "backpressure_tiered_vs_room": round(tiered_rate / room_rate, 3),
        "backpressure_archive_records_per_s": round(
            statistics.median(r.archived / r.seconds for r in tiered)
        ),
        "backpressure_failed_deliveries": sum(r.failed for r in tiered) + sum(r.failed for r in room),
        "backpressure_peak_fill": round(max(r.peak_fill for r in tiered), 3),
        "backpressure_throttled": sum(r.throttled for r in tiered),
        # CPU per record of everything on the path (broker, redis-server, client): on a machine whose
        # cores that path fills, the room run's over the tiered one's bounds the ratio above.
        "backpressure_tiered_cpu_us_per_record": round(statistics.median(r.cpu_us for r in tiered), 2),
        "backpressure_room_cpu_us_per_record": round(statistics.median(r.cpu_us for r in room), 2),
        "backpressure_tiered_runs_s": [round(r.seconds, 2) for r in tiered],
        "backpressure_room_runs_s": [round(r.seconds, 2) for r in room],
    }


def main(argv: list[str]) -> int:
    messages = int(argv[0]) if argv else MESSAGES
    runs = int(argv[1]) if len(argv) > 1 else RUNS
    for name, value in run(messages, runs).items():
        print(f"{name:36} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
