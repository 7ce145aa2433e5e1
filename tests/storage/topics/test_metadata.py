"""Topic metadata round trips (create, load, update, delete) and the config table, on a real redis-server."""

from __future__ import annotations

from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.topics import metadata
from schooner.storage.topics.config import (
    CONFIG_DEFS,
    NO_EFFECT_DOC,
    ConfigType,
    InvalidConfig,
    check_together,
    validate,
)
from schooner.storage.topics.metadata import PartitionsNotIncreasing, TopicExists, UnknownTopic


@pytest.fixture
def redis(redis_server: Any) -> Any:
    r = client.connect_sync(redis_server.url)
    yield r
    r.close()


def test_create_stamps_every_partition_and_refuses_a_second_create(redis: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    t = drive_sync(
        redis, metadata.create(ks, "orders", 3, {"retention.ms": "1000"}, {"retention.bytes": "5"})
    )
    assert (t.partitions, t.retention_ms, t.retention_bytes) == (3, 1000, 5)
    stamps = [redis.hget(ks.partition_state("orders", p), "topic_id") for p in range(3)]
    assert stamps == [str(t.id).encode()] * 3
    assert run_sync(redis, metadata.load(ks, "orders", {"retention.bytes": "5"})) == t
    assert run_sync(redis, metadata.name_of(ks, t.id)) == "orders"
    with pytest.raises(TopicExists):
        drive_sync(redis, metadata.create(ks, "orders", 1, {}, {}))


def test_update_grows_partitions_and_changes_configs(redis: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    drive_sync(redis, metadata.create(ks, "t", 1, {"retention.ms": "1000"}, {}))
    assert (
        run_sync(redis, metadata.update(ks, "t", partitions=4, set_configs={"max.message.bytes": "10"})) == 1
    )
    t = run_sync(redis, metadata.load(ks, "t", {}))
    assert (
        t is not None
        and t.partitions == 4
        and t.overrides == {"retention.ms": "1000", "max.message.bytes": "10"}
    )
    assert run_sync(redis, metadata.update(ks, "t", delete_configs=["retention.ms"])) == 4
    t = run_sync(redis, metadata.load(ks, "t", {}))
    assert t is not None and t.overrides == {"max.message.bytes": "10"}
    with pytest.raises(PartitionsNotIncreasing):
        run_sync(redis, metadata.update(ks, "t", partitions=2))
    with pytest.raises(UnknownTopic):
        run_sync(redis, metadata.update(ks, "nope", partitions=2))


def test_manual_assignments_are_kept_per_partition(redis: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    created = drive_sync(redis, metadata.create(ks, "t", 2, {}, {}, leaders={1: 7}))
    assert created.leaders == {1: 7}
    assert run_sync(redis, metadata.update(ks, "t", partitions=3, leaders={2: 8, 1: 9})) == 2
    t = run_sync(redis, metadata.load(ks, "t", {}))
    assert t is not None and (t.partitions, t.leaders) == (3, {1: 9, 2: 8})
    assert (
        run_sync(redis, metadata.update(ks, "t", set_configs={"retention.ms": "5"}, replace_configs=True))
        == 3
    )
    t = run_sync(redis, metadata.load(ks, "t", {}))
    assert t is not None and t.leaders == {1: 9, 2: 8} and t.overrides == {"retention.ms": "5"}


def test_delete_unlinks_every_partition_key_and_checks_the_id(redis: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    t = drive_sync(redis, metadata.create(ks, "gone", 2, {}, {}))
    redis.xadd(ks.stream("gone", 1), {"value": b"v"}, id="0-1")
    other = drive_sync(redis, metadata.create(ks, "other", 1, {}, {}))
    with pytest.raises(UnknownTopic):
        drive_sync(redis, metadata.delete(ks, "gone", other.id))  # not the id it has: nothing happens
    assert run_sync(redis, metadata.load(ks, "gone", {})) == t
    drive_sync(redis, metadata.delete(ks, "gone", t.id))
    assert run_sync(redis, metadata.load(ks, "gone", {})) is None
    assert not any(redis.exists(k) for p in range(2) for k in ks.partition_keys("gone", p))
    assert [x.name for x in drive_sync(redis, metadata.load_all(ks, {}))] == ["other"]
    with pytest.raises(UnknownTopic):
        drive_sync(redis, metadata.delete(ks, "gone"))


def test_the_config_table_holds_type_synonym_and_documentation() -> None:
    retention = CONFIG_DEFS["retention.ms"]
    assert (retention.kind, retention.broker_name) == (ConfigType.LONG, "log.retention.ms")
    assert retention.documentation and "retention" in retention.documentation
    assert CONFIG_DEFS["cleanup.policy"].kind == ConfigType.LIST
    assert CONFIG_DEFS["segment.bytes"].documentation == NO_EFFECT_DOC
    assert CONFIG_DEFS["min.insync.replicas"].broker_name == "min.insync.replicas"  # no synonym
    validate("retention.ms", "-1")
    with pytest.raises(InvalidConfig):
        validate("retention.ms", "soon")
    with pytest.raises(InvalidConfig):
        validate("no.such.config", "1")


def test_cleanup_policy_takes_delete_compact_or_both() -> None:
    for value in ("delete", "compact", "compact,delete", "delete,compact"):
        validate("cleanup.policy", value)
    for bad in ("", "compact,compact", "compact,", "archive", "compact;delete"):
        with pytest.raises(InvalidConfig):
            validate("cleanup.policy", bad)
    assert CONFIG_DEFS["min.compaction.lag.ms"].documentation != NO_EFFECT_DOC
    assert CONFIG_DEFS["max.compaction.lag.ms"].documentation != NO_EFFECT_DOC
    assert CONFIG_DEFS["min.cleanable.dirty.ratio"].documentation != NO_EFFECT_DOC


def test_lag_and_ratio_configs_are_validated() -> None:
    validate("min.cleanable.dirty.ratio", "0")
    validate("min.cleanable.dirty.ratio", "1.0")
    for bad in ("1.5", "-0.1", "nan", "half"):
        with pytest.raises(InvalidConfig):
            validate("min.cleanable.dirty.ratio", bad)
    with pytest.raises(InvalidConfig):
        validate("max.compaction.lag.ms", "0")
    check_together({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "10"})
    with pytest.raises(InvalidConfig):
        check_together({"min.compaction.lag.ms": "11", "max.compaction.lag.ms": "10"})
