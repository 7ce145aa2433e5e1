"""Topics whose cold table is Iceberg (schooner.table.format=iceberg): the broker archives them to
Iceberg with the catalog in Redis; plain, group and read_committed consumers read every record from
offset 0 as produced after Redis was trimmed; retention frees the disk (a broker SIGKILLed while archiving:
test_archiver_failover.py)."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from tests.broker.helpers import wait
from tests.broker.tiering.conftest import group_read, hot_state, iceberg_offsets, parquet_files, tiered
from tests.clients import SAMPLE, consume

ICEBERG = {"schooner.table.format": "iceberg"}


def test_consumers_read_every_record_and_retention_frees_disk(
    tiered_broker, redis_client, keyspace, cold_dir
) -> None:
    b = tiered_broker
    tiered("ice", b.bootstrap, **ICEBERG)
    tiered("ice-ret", b.bootstrap, **ICEBERG, **{"retention.ms": "4000"})
    stamp = int(time.time() * 1000) - 10_000
    sent = []
    producer = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 20})
    for i, rec in enumerate(SAMPLE * 30):
        producer.produce(
            "ice", value=rec.value, key=rec.key, headers=list(rec.headers) or None, timestamp=stamp + i
        )
        sent.append((rec, stamp + i))
    assert producer.flush(30) == 0
    txn = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "ice-tx", "linger.ms": 5})
    txn.init_transactions(15)
    committed = []
    for round_ in range(4):
        txn.begin_transaction()
        values = [b"t%d-%d" % (round_, i) for i in range(20)]
        for v in values:
            txn.produce("ice", value=v, key=b"t")
        txn.flush(10)
        if round_ % 2:
            txn.abort_transaction(15)
        else:
            txn.commit_transaction(15)
            committed += values
    for i in range(200):
        producer.produce("ice-ret", value=b"r%d" % i)
    assert producer.flush(30) == 0
    total = len(sent) + 80 + 4  # the records, and a marker per transaction

    def trimmed() -> bool:
        length, state = hot_state(redis_client, keyspace, "ice")
        return "cold_start" in state and int(state.get("archived_end", 0)) >= total - 1 and length < 50

    wait(trimmed, 30, "archive and trim")
    table = parquet_files(cold_dir, keyspace, "ice")[0].parents[2]
    assert (table / "metadata").is_dir()  # an Iceberg table, not a Delta one
    assert iceberg_offsets(redis_client, keyspace, "ice")[: len(sent)] == [(0, i) for i in range(len(sent))]

    # A plain consumer from offset 0: the records as produced, keys, values, headers and timestamps.
    plain = consume(b.bootstrap, [("ice", 0, 0)], len(sent), 30)
    assert [m.offset() for m in plain] == list(range(len(sent)))
    for msg, (rec, ts) in zip(plain, sent, strict=True):
        assert (msg.key(), msg.value(), msg.timestamp()) == (rec.key, rec.value, (1, ts))
        assert [(k, None if v is None else bytes(v)) for k, v in (msg.headers() or [])] == list(rec.headers)
    group = group_read(b.bootstrap, "ice", len(sent) + 80, **{"isolation.level": "read_uncommitted"})
    assert [m.value() for m in group][: len(sent)] == [rec.value for rec, _ in sent]
    assert len({m.offset() for m in group}) == len(group) == len(sent) + 80
    read_committed = group_read(b.bootstrap, "ice", len(sent) + 40, **{"isolation.level": "read_committed"})
    assert [m.value() for m in read_committed][len(sent) :] == committed

    # Retention: after retention.ms the records leave the cold tier, files and all.
    wait(lambda: not parquet_files(cold_dir, keyspace, "ice-ret") and iceberg_offsets(
        redis_client, keyspace, "ice-ret") == [], 30, "cold files deleted")  # fmt: skip
