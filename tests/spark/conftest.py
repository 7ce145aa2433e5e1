"""One SparkSession (local[2], tuned for speed) for the whole test session, and helpers that put records
into topics and read them back through the storage layer, independently of the Spark code under test."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import apache_kafka
from schooner.spark import ensure_topic, register
from schooner.storage.cold import marks as cold_marks
from schooner.storage.cold.formats import ColdTables
from schooner.storage.cold.iceberg.clients import from_url
from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.source import archive_slice
from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import read as log_read
from schooner.storage.log import retention, transactions
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import parse_fields
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic

ROOT = Path(__file__).resolve().parents[2]

# The record timestamps the helpers write: an hour ago, on a minute boundary. A dense topic applies
# retention.ms to record timestamps, as Kafka does, so made-up old ones would be trimmed at once.
BASE_MS = (int(time.time() * 1000) // 60_000 - 60) * 60_000


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    # Python workers must run this interpreter, and import tests.* for the test-only data sources.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    import pyspark
    from pyspark.sql import SparkSession

    # Spark's own Kafka connector (format("kafka")), its jars resolved by the project, not by Spark.
    connector = apache_kafka.spark_connector_jars(Path(pyspark.__file__).parent / "jars")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("schooner-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.streaming.minBatchesToRetain", "5")
        # Python workers reach the JVM over a Unix socket, not a TCP port: a suite run saw "Python worker
        # failed to connect back ... Authentication failed" as another test's client, still retrying a
        # killed broker's port, could connect to a listener that took the freed port.
        .config("spark.python.unix.domain.socket.enabled", "true")
        .config("spark.jars", ",".join(connector))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@dataclass(slots=True)
class Rec:
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Stored:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


class Log:
    """A keyspace on the test Redis, driven through schooner.storage only."""

    def __init__(self, url: str, keyspace: str, offset_encoding: str = "dense") -> None:
        self.url, self.keyspace, self.offset_encoding = url, keyspace, offset_encoding
        self.ks = Keyspace(keyspace)
        self.redis = client.connect_sync(url)

    @property
    def options(self) -> dict[str, str]:
        return {"redis.url": self.url, "keyspace": self.keyspace}

    def topic(self, name: str, partitions: int = 1, **configs: str) -> Topic:
        """The topic, created with the test's offset encoding unless configs name one."""
        return ensure_topic(
            self.options, name, partitions, {"schooner.offset.encoding": self.offset_encoding, **configs}
        )

    def load(self, name: str) -> Topic:
        topic = run_sync(self.redis, metadata.load(self.ks, name, {}))
        assert topic is not None, name
        return topic

    def append(self, name: str, partition: int, records: list[Rec]) -> list[int]:
        """Appends one batch; returns the offsets the records got."""
        result = run_sync(
            self.redis, log_append.append(self.ks, self.load(name), partition, RecordBatch(records))
        )
        assert result.status == 0, result
        first = result.base_offset
        return [first + i for i in range(len(records))]

    def values(self, name: str, partition: int, n: int, prefix: str = "v", ts: int = 0) -> list[int]:
        records = [Rec(ts or BASE_MS + i, f"k{i}".encode(), f"{prefix}{i}".encode()) for i in range(n)]
        return self.append(name, partition, records)

    def read(self, name: str) -> list[Stored]:
        """Every record of every partition, in offset order per partition."""
        topic = self.load(name)
        out: list[Stored] = []
        for p in range(topic.partitions):
            offset = 0
            while True:
                got = drive_sync(self.redis, log_read.read(self.ks, topic, p, offset, 1000))
                if not got.entries:
                    break
                for entry_id, fields in got.entries:
                    ts, key, value, headers = parse_fields(fields)
                    offset = topic.offsets.offset_of_id(entry_id)
                    out.append(Stored(p, offset, ts, key, value, headers))
                offset += 1
        return out


@pytest.fixture
def log(redis_server: Any, keyspace: str, offset_encoding: str) -> Iterator[Log]:
    store = Log(redis_server.url, keyspace, offset_encoding)
    yield store
    store.redis.close()


class Tiers:
    """A cold store on a test folder beside the log: archives through the cold storage API, as the
    broker's archiver does (a committed slice out of Redis, one commit to the topic's Delta or Iceberg
    table, the Iceberg catalog in the log's Redis), then trims Redis."""

    def __init__(self, log: Log, root: Path) -> None:
        self.log = log
        self.url = f"file://{root}"
        self.cold = ColdTables(ColdLocation.from_url(self.url), log.keyspace, None, lambda: from_url(log.url))

    @property
    def options(self) -> dict[str, str]:
        return {**self.log.options, "coldStore": self.url}

    def archive(self, name: str, partition: int, max_records: int, trim: bool = True) -> int:
        """Archives up to max_records more of the partition (trimming Redis below them); the new end."""
        topic = self.log.load(name)
        start = self.cold.archived_end(topic, partition) or 0
        piece = drive_sync(self.log.redis, archive_slice(self.log.ks, topic, partition, start, max_records))
        done = self.cold.archive(topic, partition, piece)
        end = done.end
        # The tier marks, as the archiver records them: the readers' one source of the cold tier's extent.
        first = topic.offsets.offset_of_id(piece.entries[0][0]) if done.records else None
        run_sync(self.log.redis, cold_marks.record(self.log.ks, topic, partition, end, first))
        if trim:
            run_sync(self.log.redis, retention.delete_records(self.log.ks, topic, partition, end))
        return end

    def trim(self, name: str, partition: int, below: int) -> None:
        """Retention of the whole log, as the broker applies it: the table trimmed, then the marks."""
        topic = self.log.load(name)
        self.cold.trim(topic, partition, below)
        run_sync(self.log.redis, cold_marks.record(self.log.ks, topic, partition, trimmed_below=below))

    def txn(self, name: str, partition: int, pid: int, seq: int, records: list[Rec]) -> None:
        batch = RecordBatch(records, pid, 0, seq)
        append = log_append.append(
            self.log.ks, self.log.load(name), partition, batch, transactional_id=f"tx-{pid}"
        )
        result = run_sync(self.log.redis, append)
        assert result.status == 0, result

    def end_txn(self, name: str, partition: int, pid: int, commit: bool) -> None:
        marker = transactions.write_marker(self.log.ks, self.log.load(name), partition, pid, 0, commit)
        assert run_sync(self.log.redis, marker).status == transactions.MARKER_WRITTEN


@pytest.fixture
def tiers(log: Log, tmp_path: Path) -> Tiers:
    return Tiers(log, tmp_path / "cold")
