"""The Spark source and sink on a Redis Cluster: one batch read of a topic whose 12 partitions sit on
every primary, and one batch write of what it read into another such topic."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.cluster.helpers import primaries_of
from tests.spark.conftest import BASE_MS, Log, Rec
from tests.spark.conftest import spark as spark  # the suite's one SparkSession (local[2])

PARTITIONS = 12
PER_PARTITION = 5


@pytest.fixture
def cluster_log(redis_cluster: Any, keyspace: str) -> Iterator[Log]:
    store = Log(redis_cluster.url, keyspace)
    yield store
    store.redis.close()


def test_batch_read_and_write_across_primaries(
    spark: Any, cluster_log: Log, cluster_client: redis.RedisCluster
) -> None:
    log = cluster_log
    log.topic("sp-in", PARTITIONS)
    log.topic("sp-out", PARTITIONS)
    assert len(primaries_of(cluster_client, [log.ks.stream("sp-in", p) for p in range(PARTITIONS)])) == 3
    for p in range(PARTITIONS):
        log.append(
            "sp-in", p, [Rec(BASE_MS + i, b"k%d" % p, b"%d-%d" % (p, i)) for i in range(PER_PARTITION)]
        )

    df = spark.read.format("schooner").options(**log.options).option("subscribe", "sp-in").load()
    rows = df.collect()
    assert sorted((r.partition, r.offset, r.key, r.value, r.timestamp.timestamp()) for r in rows) == [
        (p, i, b"k%d" % p, b"%d-%d" % (p, i), (BASE_MS + i) / 1000)
        for p in range(PARTITIONS)
        for i in range(PER_PARTITION)
    ]

    # The sink appends each partition's rows in that partition's slot, on whichever primary holds it.
    out = df.selectExpr("'sp-out' AS topic", "(partition + 1) % 12 AS partition", "key", "value")
    out.write.format("schooner").options(**log.options).mode("append").save()
    stored = sorted((s.partition, s.key, s.value) for s in log.read("sp-out"))
    assert stored == sorted(
        ((p + 1) % PARTITIONS, b"k%d" % p, b"%d-%d" % (p, i))
        for p in range(PARTITIONS)
        for i in range(PER_PARTITION)
    )
    assert [cluster_client.xlen(log.ks.stream("sp-out", p)) for p in range(PARTITIONS)] == [
        PER_PARTITION
    ] * PARTITIONS
