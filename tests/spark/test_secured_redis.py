"""The Spark source and sink on a secured Redis: over TLS with a password and a client certificate, and as a
Redis ACL user of its keyspace, on a tenant's keyspace (`<prefix>:tenant:<name>`)."""

from __future__ import annotations

from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from tests.spark.conftest import Log


def _write_then_read(spark: Any, url: str, keyspace: str) -> None:
    log = Log(url, Keyspace(keyspace).tenant("acme").prefix)
    try:
        log.topic("events", 2)
        rows = [("events", i % 2, f"k{i}", f"value {i}") for i in range(20)]
        df = spark.createDataFrame(rows, "topic string, partition int, key string, value string")
        df.write.format("schooner").options(**log.options).mode("append").save()  # the sink
        assert {(s.partition, s.value) for s in log.read("events")} == {
            (p, v.encode()) for _, p, _, v in rows
        }
        read = spark.read.format("schooner").options(**log.options).option("subscribe", "events").load()
        assert sorted(r.value for r in read.collect()) == sorted(v.encode() for *_, v in rows)  # the source
    finally:
        log.redis.close()


@pytest.mark.single_redis
def test_spark_over_tls(spark: Any, tls_redis: Any, keyspace: str) -> None:
    _write_then_read(spark, tls_redis.url, keyspace)


def test_spark_as_an_acl_user(spark: Any, acl_redis_url: str, keyspace: str) -> None:
    _write_then_read(spark, acl_redis_url, keyspace)
