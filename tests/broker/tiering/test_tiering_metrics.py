"""The tiering series of /metrics: records and bytes archived, the archive lag of each tiered partition
(records not yet in the cold tier), and the cold reads' latency."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, Producer

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

    # An open transaction holds the archiver at the last stable offset: its records are the lag.
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "open-one"})
    txn.init_transactions(15)
    txn.begin_transaction()
    for _ in range(5):
        txn.produce("clicks", VALUE, KEY, partition=0)
    assert txn.flush(15) == 0
    _wait(lambda: scrape(port).value("schooner_archive_lag_records", topic="clicks", partition="0") == 5)

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
    assert scrape(port).value("schooner_cold_fetch_seconds_count") >= 1
