"""The tiering series of /metrics: records and bytes archived, the archive lag of each tiered partition
(records not yet in the cold tier), the cold reads' latency, and Kafka's tiered-storage meters (remote
copy, fetch and delete; the remote copy lag per topic)."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from schooner.broker.partitions.recent_batches import WINDOW_SECONDS
from tests.broker.metrics_rig import scrape, with_metrics
from tests.broker.tiering.conftest import FAST, hot_state, tiered

N = 400
KEY, VALUE = b"k" * 7, b"v" * 50


def _wait(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_archived_records_bytes_lag_and_cold_reads_are_counted(
    broker_factory: Any, tmp_path, redis_client
) -> None:
    broker, port = with_metrics(broker_factory, cold_store_url=str(tmp_path / "cold"), **FAST)
    ks = broker.settings.keyspace
    tiered("clicks", broker.bootstrap)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for _ in range(N):
        producer.produce("clicks", VALUE, KEY, partition=0)
    assert producer.flush(15) == 0
    # Archived and gone from Redis: the lag is 0, and the counters hold exactly what was produced.
    _wait(lambda: hot_state(redis_client, ks, "clicks")[1].get("archived_end") == str(N))
    _wait(lambda: scrape(port).value("schooner_archive_lag_records", topic="clicks", partition="0") == 0)
    seen = scrape(port)
    assert seen.value("schooner_archived_records_total", topic="clicks") == N
    assert seen.value("schooner_archived_bytes_total", topic="clicks") == N * (len(KEY) + len(VALUE))
    # Kafka's names: each archive commit a remote copy request, its bytes those archived; no lag left.
    assert 1 <= seen.value("schooner_remote_copy_requests_total", topic="clicks") <= N
    assert seen.value("schooner_remote_copy_bytes_total", topic="clicks") == N * (len(KEY) + len(VALUE))
    assert seen.value("schooner_remote_copy_errors_total", topic="clicks") == 0
    assert ("schooner_remote_copy_lag_records", frozenset({("topic", "clicks")})) in seen.samples
    assert seen.value("schooner_remote_copy_lag_records", topic="clicks") == 0
    assert seen.value("schooner_remote_copy_lag_bytes", topic="clicks") == 0

    # An open transaction holds the archiver at the last stable offset: its records are the lag.
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "open-one"})
    txn.init_transactions(15)
    txn.begin_transaction()
    for _ in range(5):
        txn.produce("clicks", VALUE, KEY, partition=0)
    assert txn.flush(15) == 0
    _wait(lambda: scrape(port).value("schooner_archive_lag_records", topic="clicks", partition="0") == 5)
    seen = scrape(port)
    assert seen.value("schooner_remote_copy_lag_records", topic="clicks") == 5
    # Estimated from the partition's average record size: a batch's bytes per record, over key and value.
    lag_bytes = seen.value("schooner_remote_copy_lag_bytes", topic="clicks")
    assert 5 * (len(KEY) + len(VALUE)) <= lag_bytes < 5 * 1000

    # A consumer from offset 0 reads the archived records from the cold tier: each read is timed.
    _wait(lambda: hot_state(redis_client, ks, "clicks")[0] <= 5)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "reader",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_uncommitted",
        }
    )
    consumer.subscribe(["clicks"])
    got = 0
    deadline = time.monotonic() + 30
    while got < N and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got += 1
    consumer.close()
    txn.abort_transaction(15)
    assert got >= N
    seen = scrape(port)
    assert seen.value("schooner_cold_fetch_seconds_count") >= 1
    # Each cold read serving a fetch is a remote fetch request, its records' fields the bytes.
    reads = seen.value("schooner_remote_fetch_requests_total", topic="clicks")
    assert reads == seen.value("schooner_cold_fetch_seconds_count") and reads >= 1
    assert seen.value("schooner_remote_fetch_bytes_total", topic="clicks") >= N * (len(KEY) + len(VALUE))
    assert seen.value("schooner_remote_fetch_errors_total", topic="clicks") == 0
    assert seen.value("schooner_remote_delete_requests_total", topic="clicks") == 0

    # DeleteRecords below the Redis start trims the cold tier: a remote delete request.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (done,) = admin.delete_records([TopicPartition("clicks", 0, N // 2)]).values()
    assert done.result(15).low_watermark == N // 2
    seen = scrape(port)
    assert seen.value("schooner_remote_delete_requests_total", topic="clicks") == 1
    assert seen.value("schooner_remote_delete_errors_total", topic="clicks") == 0


def test_a_damaged_table_counts_remote_fetch_delete_and_copy_errors(
    broker_factory: Any, tmp_path, redis_client
) -> None:
    cold = tmp_path / "cold"
    broker, port = with_metrics(broker_factory, cold_store_url=str(cold), **FAST)
    ks = broker.settings.keyspace
    tiered("damaged", broker.bootstrap, local_ms="1")
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for _ in range(N):
        producer.produce("damaged", VALUE, KEY, partition=0)
    assert producer.flush(15) == 0
    _wait(lambda: hot_state(redis_client, ks, "damaged")[1].get("archived_end") == str(N))
    _wait(lambda: hot_state(redis_client, ks, "damaged")[0] == 0)
    # Every data file overwritten with bytes that are not Parquet (nothing has read them yet).
    files = list(cold.rglob("*.parquet"))
    assert files
    for path in files:
        path.write_bytes(b"\0" * path.stat().st_size)

    # A fetch from offset 0 needs the cold tier (once the batches the broker keeps of its own appends have
    # aged out): the read fails, is counted, and the consumer gets nothing.
    time.sleep(WINDOW_SECONDS + 0.2)
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "damaged", "auto.offset.reset": "earliest"}
    )
    consumer.assign([TopicPartition("damaged", 0, 0)])
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        assert message is None or message.error() is not None
    consumer.close()
    seen = scrape(port)
    failed = seen.value("schooner_remote_fetch_errors_total", topic="damaged")
    assert failed >= 1 and seen.value("schooner_remote_fetch_requests_total", topic="damaged") >= failed
    assert seen.value("schooner_remote_fetch_bytes_total", topic="damaged") == 0

    # DeleteRecords inside a file must rewrite it: the trim fails, a request and an error.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (done,) = admin.delete_records([TopicPartition("damaged", 0, N // 2)]).values()
    assert done.exception(30) is not None
    seen = scrape(port)
    assert seen.value("schooner_remote_delete_requests_total", topic="damaged") == 1
    assert seen.value("schooner_remote_delete_errors_total", topic="damaged") == 1

    # A table log entry that is not JSON: the next archive step cannot read the table, a copy error.
    (log,) = cold.rglob("_delta_log")
    versions = sorted(int(p.stem) for p in log.glob("*.json"))
    (log / f"{versions[-1] + 1:020d}.json").write_text("not a delta action\n")
    for _ in range(10):
        producer.produce("damaged", VALUE, KEY, partition=0)
    assert producer.flush(15) == 0
    _wait(lambda: scrape(port).value("schooner_remote_copy_errors_total", topic="damaged") >= 1)
    assert hot_state(redis_client, ks, "damaged")[1].get("archived_end") == str(N)
