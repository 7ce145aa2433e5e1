"""A broker SIGKILLed in the middle of archiving: another broker takes its partitions over, and the
cold tier's tables hold each offset exactly once (the Delta app transaction per partition, and the
Iceberg commit's `schooner.end.<partition>` property, on one topic of each format)."""

from __future__ import annotations

from confluent_kafka import Producer

from tests.broker.helpers import wait
from tests.broker.tiering.conftest import cold_offsets, hot_state, iceberg_offsets, tiered
from tests.clients import consume

PARTITIONS = 4
PER_PARTITION = 4000
ICEBERG_PARTITIONS = 2


def test_sigkill_while_archiving_leaves_each_offset_once(
    broker_factory, redis_client, keyspace, cold_dir
) -> None:
    env = {
        "SCHOONER_COLD_STORE_URL": str(cold_dir),
        "SCHOONER_ARCHIVE_INTERVAL_MS": "100",
        "SCHOONER_ARCHIVE_BATCH_RECORDS": "200",  # many small steps: a kill lands between or inside one
        "SCHOONER_ARCHIVE_CONCURRENCY": "8",  # every partition of both topics at once
        "SCHOONER_LOG_RETENTION_CHECK_INTERVAL_MS": "300",
    }
    first, second = (broker_factory(process=True, **env) for _ in range(2))
    tiered("kill", first.bootstrap, PARTITIONS)
    tiered("icekill", first.bootstrap, ICEBERG_PARTITIONS, **{"schooner.table.format": "iceberg"})
    producer = Producer({"bootstrap.servers": second.bootstrap, "linger.ms": 20})

    def produce(topic: str, partitions: int, offsets: range) -> None:
        for i in offsets:
            for p in range(partitions):
                producer.produce(topic, value=b"%d-%d" % (p, i), key=b"k%d" % i, partition=p)
        assert producer.flush(60) == 0

    def archived(topic: str, p: int) -> int:
        return int(hot_state(redis_client, keyspace, topic, p)[1].get("archived_end", "0"))

    # Every Delta record, half the Iceberg ones (the rest after the kill, for the broker left).
    produce("kill", PARTITIONS, range(PER_PARTITION))
    produce("icekill", ICEBERG_PARTITIONS, range(PER_PARTITION // 2))
    # Kill the first broker while its Delta partitions are partly archived and Iceberg's under way.
    wait(
        lambda: (
            any(0 < archived("kill", p) < PER_PARTITION for p in range(PARTITIONS))
            and any(archived("icekill", p) > 0 for p in range(ICEBERG_PARTITIONS))
        ),
        30,
        "archiving under way",
    )
    first.kill()
    produce("icekill", ICEBERG_PARTITIONS, range(PER_PARTITION // 2, PER_PARTITION))
    # The second broker takes the partitions over (the first's registration lapses, then its claims).
    for topic, partitions in (("kill", PARTITIONS), ("icekill", ICEBERG_PARTITIONS)):
        wait(
            lambda: all(archived(topic, p) == PER_PARTITION for p in range(partitions)),  # noqa: B023
            60,
            f"every partition of {topic} archived",
        )
    each_offset_once = [(p, i) for p in range(PARTITIONS) for i in range(PER_PARTITION)]
    assert cold_offsets(cold_dir, keyspace, "kill") == each_offset_once
    assert iceberg_offsets(redis_client, keyspace, "icekill") == each_offset_once[: 2 * PER_PARTITION]
    # Everything is still served from offset 0, through cold then hot.
    for topic, partitions in (("kill", PARTITIONS), ("icekill", ICEBERG_PARTITIONS)):
        wait(lambda: hot_state(redis_client, keyspace, topic, 0)[0] < PER_PARTITION, 20, "Redis trimmed")  # noqa: B023
        got = consume(
            second.bootstrap, [(topic, p, 0) for p in range(partitions)], partitions * PER_PARTITION, 60
        )
        seen = {(m.partition(), m.offset()) for m in got}
        assert len(got) == len(seen) == partitions * PER_PARTITION
        assert all(m.value() == b"%d-%d" % (m.partition(), m.offset()) for m in got)
