"""Tiered storage, through the broker: archival records/s, a kcat fetch from the cold tier against the same
fetch from Redis, Redis bytes of an archived topic against the same topic untiered, and Parquet bytes per
record.

Its own redis-server and broker (the cold store in a temporary folder, an archive pass every 100 ms). Two
one-partition topics get the same `messages` 100-byte records from confluent-kafka: `bench-hot` stays in
Redis; `bench-tiered` is made tiered once it is full (remote.storage.enable, local.retention.ms 1), so the
archiver's rate is its own and not the producer's. Archival runs until the partition's archived end
reaches the high watermark, and Redis is trimmed below it. Then kcat reads each topic from offset 0 to the
end, the two taking turns at going first, `runs` times: the cold read's rate over the hot one's is the
ratio. `python -m bench.tiering [MESSAGES [RUNS]]` runs it alone.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from schooner.storage.keys import Keyspace
from schooner.storage.redis.embedded import EmbeddedRedis, free_port

from .fetch import kcat_consume
from .memory import keys_memory
from .produce import bench_value, close_producer, create_topics, make_producer, produce_topic
from .servers import broker_command, stop_process, wait_for_port

MESSAGES = 300_000
RUNS = 3
KEYSPACE = "bench-tiering"
HOT, TIERED = "bench-hot", "bench-tiered"
ARCHIVE_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class TieredBroker:
    """A broker with a cold store, on a redis-server of its own (both stopped by the ExitStack)."""

    bootstrap: str
    client: redis.Redis
    broker_pid: int
    redis_pid: int | None


def start_tiered_broker(
    stack: ExitStack, folder: Path, keyspace: str = KEYSPACE, archive_interval_ms: int = 100
) -> TieredBroker:
    """The redis-server, then `schooner broker` over it with the cold store in folder/cold (also used by
    bench/backpressure.py)."""
    server = EmbeddedRedis(folder / "redis", persistent=False)
    server.start()
    stack.callback(server.stop)
    port = free_port()
    args = [
        *broker_command(), "broker",
        "--redis-url", server.url,
        "--port", str(port),
        "--keyspace", keyspace,
        "--log-level", "WARNING",
        "--cold-store-url", str(folder / "cold"),
        "--archive-interval-ms", str(archive_interval_ms),
    ]  # fmt: skip
    log = stack.enter_context((folder / "broker.log").open("wb"))
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    stack.callback(stop_process, process)
    wait_for_port(port, process, timeout=30)
    client = redis.Redis.from_url(server.url)
    stack.callback(client.close)
    return TieredBroker(f"127.0.0.1:{port}", client, process.pid, server.pid)


def _produce(bootstrap: str, topic: str, messages: int) -> None:
    producer = make_producer(bootstrap)
    failed = True
    try:
        produce_topic(producer, topic, messages, bench_value())
        failed = False
    finally:
        close_producer(producer, failed)


def _tier(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        "topic",
        topic,
        incremental_configs=[
            ConfigEntry("remote.storage.enable", "true", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("local.retention.ms", "1", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _archived_end(client: redis.Redis, ks: Keyspace, topic: str) -> int:
    value = client.hget(ks.partition_state(topic, 0), "archived_end")
    return int(value) if value else 0


def _wait_archived(client: redis.Redis, ks: Keyspace, messages: int) -> float:
    """Seconds until the tiered partition's archived end reaches `messages` and Redis holds none of them."""
    began = time.perf_counter()
    stream = ks.stream(TIERED, 0)
    while _archived_end(client, ks, TIERED) < messages or int(client.xlen(stream)) > 0:
        if time.perf_counter() - began > ARCHIVE_TIMEOUT_S:
            raise RuntimeError(
                f"archived {_archived_end(client, ks, TIERED)} of {messages} records in "
                f"{ARCHIVE_TIMEOUT_S:.0f} s ({int(client.xlen(stream))} entries left in Redis)"
            )
        time.sleep(0.02)
    return time.perf_counter() - began


def run(messages: int = MESSAGES, runs: int = RUNS) -> dict[str, Any]:
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-bench-tiering-")))
        broker = start_tiered_broker(stack, folder)
        bootstrap, client = broker.bootstrap, broker.client
        ks = Keyspace(KEYSPACE)
        create_topics(bootstrap, [HOT, TIERED], {"retention.ms": "-1"})
        _produce(bootstrap, HOT, messages)
        _produce(bootstrap, TIERED, messages)
        _tier(bootstrap, TIERED)
        archive_s = _wait_archived(client, ks, messages)
        hot_rates: list[float] = []
        cold_rates: list[float] = []
        for i in range(runs):
            order = [(HOT, hot_rates), (TIERED, cold_rates)]
            for topic, rates in order if i % 2 == 0 else reversed(order):
                rates.append(kcat_consume(bootstrap, topic, messages).steady_msgs_per_s)
        hot_bytes = keys_memory(client, ks.partition_keys(HOT, 0))
        tiered_bytes = keys_memory(client, ks.partition_keys(TIERED, 0))
        parquet = sum(f.stat().st_size for f in (folder / "cold").rglob("*.parquet"))
    hot, cold = statistics.median(hot_rates), statistics.median(cold_rates)
    return {
        "tiering_messages": messages,
        "tiering_archive_records_per_s": round(messages / archive_s),
        "tiering_hot_fetch_msgs_per_s": round(hot),
        "tiering_cold_fetch_msgs_per_s": round(cold),
        "tiering_cold_vs_hot_fetch": round(cold / hot, 3),
        "tiering_hot_fetch_runs": [round(r) for r in hot_rates],
        "tiering_cold_fetch_runs": [round(r) for r in cold_rates],
        "tiering_redis_bytes_untiered": hot_bytes,
        "tiering_redis_bytes_archived": tiered_bytes,
        "tiering_redis_bytes_ratio": round(tiered_bytes / hot_bytes, 4),
        "tiering_parquet_bytes_per_record": round(parquet / messages, 2),
    }


def main(argv: list[str]) -> int:
    messages = int(argv[0]) if argv else MESSAGES
    runs = int(argv[1]) if len(argv) > 1 else RUNS
    for name, value in run(messages, runs).items():
        print(f"{name:36} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
