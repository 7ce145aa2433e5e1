"""Tiered storage, through the broker: archival records/s (raw Delta, typed Delta, Iceberg), kcat fetches
from the cold tier (Delta and Iceberg) against the same fetch from Redis, Redis bytes of an archived topic
against the same topic untiered, and Parquet bytes per record.

Its own redis-server and broker (the cold store in a temporary folder, an archive pass every 100 ms). One
untiered topic and three to be tiered get the same `messages` 100-byte records from confluent-kafka:
`bench-hot` stays in Redis; `bench-tiered` goes to a Delta table of raw columns; `bench-typed` (Avro
values, framed by confluent-kafka's AvroSerializer against the broker's registry) to a Delta table with
typed columns decoded by each record's schema id (`schooner.table.value.mode=schema_id_prefix`);
`bench-iceberg` to an Iceberg table (`schooner.table.format=iceberg`). Each is made tiered once it is
full (remote.storage.enable, local.retention.ms 1), one at a time, so each archival rate is the
archiver's own, not the producer's nor another table's. Archival runs until the partition's archived end
reaches the high watermark, and Redis is trimmed below it. Then kcat reads the untiered topic and a raw
tiered one from offset 0 to the end, taking turns at going first, `runs` times, for each of the two raw
tiered topics in turn (so the broker's cache of decoded files holds one table's): each cold read's rate
over its paired hot one's is a ratio. `python -m bench.tiering [MESSAGES [RUNS]]` runs it alone.
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
from schooner.storage.topics.config import SCHEMA_ID_PREFIX, TABLE_FORMAT, TABLE_VALUE_MODE

from .fetch import kcat_consume
from .memory import keys_memory
from .produce import VALUE_SIZE, bench_value, close_producer, create_topics, make_producer, produce_topic
from .servers import broker_command, stop_process, wait_for_port

MESSAGES = 300_000
RUNS = 3
KEYSPACE = "bench-tiering"
HOT, TIERED, TYPED, ICEBERG = "bench-hot", "bench-tiered", "bench-typed", "bench-iceberg"
# Each tiered topic's table, fixed when it is created.
TABLES: dict[str, dict[str, str]] = {
    TIERED: {},
    TYPED: {TABLE_VALUE_MODE: SCHEMA_ID_PREFIX},
    ICEBERG: {TABLE_FORMAT: "iceberg"},
}
ARCHIVE_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class TieredBroker:
    """A broker with a cold store, on a redis-server of its own (both stopped by the ExitStack)."""

    bootstrap: str
    registry_url: str
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
    port, registry_port = free_port(), free_port()
    args = [
        *broker_command(), "broker",
        "--redis-url", server.url,
        "--port", str(port),
        "--keyspace", keyspace,
        "--log-level", "WARNING",
        "--cold-store-url", str(folder / "cold"),
        "--archive-interval-ms", str(archive_interval_ms),
        "--schema-registry-port", str(registry_port),
    ]  # fmt: skip
    log = stack.enter_context((folder / "broker.log").open("wb"))
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    stack.callback(stop_process, process)
    wait_for_port(port, process, timeout=30)
    client = redis.Redis.from_url(server.url)
    stack.callback(client.close)
    registry = f"http://127.0.0.1:{registry_port}"
    return TieredBroker(f"127.0.0.1:{port}", registry, client, process.pid, server.pid)


def _produce(bootstrap: str, topic: str, messages: int, value: bytes) -> None:
    producer = make_producer(bootstrap)
    failed = True
    try:
        produce_topic(producer, topic, messages, value)
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


def _wait_archived(client: redis.Redis, ks: Keyspace, topic: str, messages: int) -> float:
    """Seconds until the tiered partition's archived end reaches `messages` and Redis holds none of them."""
    began = time.perf_counter()
    stream = ks.stream(topic, 0)
    while _archived_end(client, ks, topic) < messages or int(client.xlen(stream)) > 0:
        if time.perf_counter() - began > ARCHIVE_TIMEOUT_S:
            raise RuntimeError(
                f"{topic}: archived {_archived_end(client, ks, topic)} of {messages} records in "
                f"{ARCHIVE_TIMEOUT_S:.0f} s ({int(client.xlen(stream))} entries left in Redis)"
            )
        time.sleep(0.02)
    return time.perf_counter() - began


def _avro_value(registry_url: str, topic: str) -> bytes:
    """A 100-byte Avro event framed with its schema id, the schema registered under `<topic>-value`."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from .schemas import avro_value, wait_for_registry

    wait_for_registry(registry_url)
    return avro_value(SchemaRegistryClient({"url": registry_url}), topic, VALUE_SIZE)[0]


def _paired(bootstrap: str, cold_topic: str, messages: int, runs: int) -> tuple[list[float], list[float]]:
    """kcat's steady msgs/s reading the untiered topic and a tiered one, taking turns at going first."""
    hot: list[float] = []
    cold: list[float] = []
    for i in range(runs):
        order = [(HOT, hot), (cold_topic, cold)]
        for topic, rates in order if i % 2 == 0 else reversed(order):
            rates.append(kcat_consume(bootstrap, topic, messages).steady_msgs_per_s)
    return hot, cold


def _parquet_bytes(cold: Path, topic: str) -> int:
    return sum(f.stat().st_size for f in cold.rglob("*.parquet") if topic in f.relative_to(cold).parts)


def run(messages: int = MESSAGES, runs: int = RUNS) -> dict[str, Any]:
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-bench-tiering-")))
        broker = start_tiered_broker(stack, folder)
        bootstrap, client = broker.bootstrap, broker.client
        ks = Keyspace(KEYSPACE)
        create_topics(bootstrap, [HOT], {"retention.ms": "-1"})
        for topic, table in TABLES.items():
            create_topics(bootstrap, [topic], {"retention.ms": "-1", **table})
        values = {HOT: bench_value(), TIERED: bench_value(), ICEBERG: bench_value()}
        values[TYPED] = _avro_value(broker.registry_url, TYPED)
        for topic, value in values.items():
            _produce(bootstrap, topic, messages, value)
        archive_s: dict[str, float] = {}
        for topic in TABLES:
            _tier(bootstrap, topic)
            archive_s[topic] = _wait_archived(client, ks, topic, messages)
        # Each cold tier paired with Redis on its own: the two tables' decoded files together are more
        # than the broker's file cache holds, and one consumer catching up reads one topic.
        hot_rates, cold_rates = _paired(bootstrap, TIERED, messages, runs)
        iceberg_hot_rates, iceberg_rates = _paired(bootstrap, ICEBERG, messages, runs)
        hot_bytes = keys_memory(client, ks.partition_keys(HOT, 0))
        tiered_bytes = keys_memory(client, ks.partition_keys(TIERED, 0))
        parquet = {topic: _parquet_bytes(folder / "cold", topic) for topic in TABLES}
    hot, cold = statistics.median(hot_rates), statistics.median(cold_rates)
    iceberg_hot, iceberg = statistics.median(iceberg_hot_rates), statistics.median(iceberg_rates)
    return {
        "tiering_messages": messages,
        "tiering_archive_records_per_s": round(messages / archive_s[TIERED]),
        "tiering_typed_archive_records_per_s": round(messages / archive_s[TYPED]),
        "tiering_iceberg_archive_records_per_s": round(messages / archive_s[ICEBERG]),
        "tiering_hot_fetch_msgs_per_s": round(hot),
        "tiering_cold_fetch_msgs_per_s": round(cold),
        "tiering_cold_vs_hot_fetch": round(cold / hot, 3),
        "tiering_iceberg_hot_fetch_msgs_per_s": round(iceberg_hot),
        "tiering_iceberg_cold_fetch_msgs_per_s": round(iceberg),
        "tiering_iceberg_cold_vs_hot_fetch": round(iceberg / iceberg_hot, 3),
        "tiering_hot_fetch_runs": [round(r) for r in hot_rates],
        "tiering_cold_fetch_runs": [round(r) for r in cold_rates],
        "tiering_iceberg_cold_fetch_runs": [round(r) for r in iceberg_rates],
        "tiering_redis_bytes_untiered": hot_bytes,
        "tiering_redis_bytes_archived": tiered_bytes,
        "tiering_redis_bytes_ratio": round(tiered_bytes / hot_bytes, 4),
        "tiering_parquet_bytes_per_record": round(parquet[TIERED] / messages, 2),
        "tiering_typed_parquet_bytes_per_record": round(parquet[TYPED] / messages, 2),
        "tiering_iceberg_parquet_bytes_per_record": round(parquet[ICEBERG] / messages, 2),
    }


def main(argv: list[str]) -> int:
    messages = int(argv[0]) if argv else MESSAGES
    runs = int(argv[1]) if len(argv) > 1 else RUNS
    for name, value in run(messages, runs).items():
        print(f"{name:36} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
