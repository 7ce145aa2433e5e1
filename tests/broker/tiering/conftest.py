"""Fixtures of the tiering tests: a broker with a cold store on a test folder and short intervals, and
helpers that create tiered topics and look at the hot and cold tiers."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.storage.cold.iceberg.catalog import RedisCatalog
from schooner.storage.keys import Keyspace
from tests.conftest import RunningBroker

# Short intervals by settings, so that records leave Redis within a second or two.
FAST = {
    "archive_interval_ms": 150,
    "log_retention_check_interval_ms": 300,
    "archive_batch_records": 500,
}


@pytest.fixture
def cold_dir(tmp_path: Path) -> Path:
    return tmp_path / "cold"


@pytest.fixture
def tiered_broker(broker_factory: Callable[..., Any], cold_dir: Path) -> RunningBroker:
    return broker_factory(cold_store_url=str(cold_dir), **FAST)  # type: ignore[no-any-return]


def create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    """Creates a topic through the Kafka admin API (an error fails the test)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=configs)], operation_timeout=10)
    futures[name].result(15)


def tiered(name: str, bootstrap: str, partitions: int = 1, local_ms: str = "1000", **configs: str) -> None:
    create_topic(
        bootstrap,
        name,
        partitions,
        **{"remote.storage.enable": "true", "local.retention.ms": local_ms, **configs},
    )


def hot_state(client: Any, keyspace: str, topic: str, partition: int = 0) -> tuple[int, dict[str, str]]:
    """The partition's stream length in Redis and its state hash's tier marks."""
    length = client.xlen(f"{keyspace}:stream:{{{topic}:{partition}}}")
    raw = client.hgetall(f"{keyspace}:pstate:{{{topic}:{partition}}}")
    wanted = ("archived_end", "cold_start", "valid_from")
    return int(length), {k.decode(): v.decode() for k, v in raw.items() if k.decode() in wanted}


def cold_table(cold_dir: Path, keyspace: str, topic: str) -> Path:
    """The topic's Delta table folder: <root>/<keyspace>/<topic>/<topic id>."""
    (table,) = (cold_dir / keyspace / topic).iterdir()
    return table


def cold_offsets(cold_dir: Path, keyspace: str, topic: str) -> list[tuple[int, int]]:
    """(partition, offset) of every row of the topic's table, read by plain deltalake code."""
    from deltalake import DeltaTable

    rows = DeltaTable(str(cold_table(cold_dir, keyspace, topic))).to_pyarrow_table(
        columns=["partition", "offset"]
    )
    return sorted(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist(), strict=True))


def parquet_files(cold_dir: Path, keyspace: str, topic: str) -> list[Path]:
    """The data files on disk (vacuumed files are gone from here); none before the table exists."""
    if not (cold_dir / keyspace / topic).exists():
        return []
    return sorted(cold_table(cold_dir, keyspace, topic).rglob("*.parquet"))


def iceberg_offsets(redis_client: Any, keyspace: str, topic: str) -> list[tuple[int, int]]:
    """(partition, offset) of every row of the topic's table, read by plain pyiceberg through the
    catalog kept in Redis."""
    catalog = RedisCatalog("check", redis_client, Keyspace(keyspace))
    pattern = re.compile(re.sub(r"[^A-Za-z0-9_]", "_", topic) + "_[0-9a-f]{32}")
    (name,) = [t for t in catalog.list_tables(keyspace.replace(":", "_")) if pattern.fullmatch(t[-1])]
    rows = catalog.load_table(name).scan(selected_fields=("partition", "offset")).to_arrow()
    return sorted(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist(), strict=True))


def group_read(bootstrap: str, topic: str, count: int, **conf: Any) -> list[Any]:
    """A consumer group's records of the topic from the beginning, until `count` came (or 40 s)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}-{conf.get('isolation.level', 'u')}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            **conf,
        }
    )
    consumer.subscribe([topic])
    out: list[Any] = []
    deadline = time.monotonic() + 40
    try:
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append(msg)
    finally:
        consumer.close()
    return out
