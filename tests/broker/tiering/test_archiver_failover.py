"""A broker SIGKILLed in the middle of archiving: another broker takes its partitions over, and the
cold tier's table holds each offset exactly once (the Delta app transaction per partition)."""

from __future__ import annotations

from confluent_kafka import Producer

from tests.broker.helpers import wait
from tests.broker.tiering.conftest import cold_offsets, hot_state, tiered
from tests.clients import consume

PARTITIONS = 4
PER_PARTITION = 4000


def test_sigkill_while_archiving_leaves_each_offset_once(
    broker_factory, redis_client, keyspace, cold_dir
) -> None:
    env = {
        "SCHOONER_COLD_STORE_URL": str(cold_dir),
        "SCHOONER_ARCHIVE_INTERVAL_MS": "100",
        "SCHOONER_ARCHIVE_BATCH_RECORDS": "200",  # many small steps: a kill lands between or inside one
        "SCHOONER_LOG_RETENTION_CHECK_INTERVAL_MS": "300",
    }
    first, second = (broker_factory(process=True, **env) for _ in range(2))
    tiered("kill", first.bootstrap, PARTITIONS)
    producer = Producer({"bootstrap.servers": second.bootstrap, "linger.ms": 20})
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            producer.produce("kill", value=b"%d-%d" % (p, i), key=b"k%d" % i, partition=p)
    assert producer.flush(60) == 0

    def archived(p: int) -> int:
        return int(hot_state(redis_client, keyspace, "kill", p)[1].get("archived_end", "0"))

    # Kill the first broker while its partitions are partly archived.
    wait(lambda: any(0 < archived(p) < PER_PARTITION for p in range(PARTITIONS)), 30, "archiving under way")
    first.kill()
    # The second broker takes the partitions over (the first's registration lapses, then its claims).
    wait(lambda: all(archived(p) == PER_PARTITION for p in range(PARTITIONS)), 60, "every partition archived")
    rows = cold_offsets(cold_dir, keyspace, "kill")
    assert rows == [(p, i) for p in range(PARTITIONS) for i in range(PER_PARTITION)]  # each offset once
    # Everything is still served from offset 0, through cold then hot.
    wait(lambda: hot_state(redis_client, keyspace, "kill", 0)[0] < PER_PARTITION, 20, "Redis trimmed")
    got = consume(
        second.bootstrap, [("kill", p, 0) for p in range(PARTITIONS)], PARTITIONS * PER_PARTITION, 60
    )
    seen = {(m.partition(), m.offset()) for m in got}
    assert len(got) == len(seen) == PARTITIONS * PER_PARTITION
    assert all(m.value() == b"%d-%d" % (m.partition(), m.offset()) for m in got)
