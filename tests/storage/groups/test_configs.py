"""Group configs in Redis: one hash per group id, in the group's slot, changed by one script that can
refuse when the hash is not what the caller read."""

from __future__ import annotations

from typing import Any

from schooner.storage.groups import configs, state
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync


def _tag(key: str) -> str:
    return key[key.index("{") + 1 : key.index("}")]


def test_the_configs_hash_shares_the_groups_slot() -> None:
    ks = Keyspace("s")
    assert _tag(ks.group_configs("payments")) == _tag(ks.group("payments")) == "payments"
    assert ks.group_configs("payments") not in (ks.group("payments"), ks.group_offsets("payments"))


def test_set_delete_and_replace(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    assert run_sync(redis, configs.get(ks, "g")) == {}
    sets = {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "3"}
    assert run_sync(redis, configs.alter(ks, "g", sets))
    assert run_sync(redis, configs.get(ks, "g")) == sets
    # One call sets one config and deletes another.
    assert run_sync(redis, configs.alter(ks, "g", {"share.isolation.level": "read_committed"},
                                         ["share.delivery.count.limit"]))  # fmt: skip
    assert run_sync(redis, configs.get(ks, "g")) == {
        "share.auto.offset.reset": "earliest",
        "share.isolation.level": "read_committed",
    }
    # replace: what is set is all the group keeps.
    assert run_sync(redis, configs.alter(ks, "g", {"share.record.lock.duration.ms": "20000"}, replace=True))
    assert run_sync(redis, configs.get(ks, "g")) == {"share.record.lock.duration.ms": "20000"}
    assert run_sync(redis, configs.get(ks, "other")) == {}
    assert run_sync(redis, configs.delete_all(ks, "g"))
    assert not run_sync(redis, configs.delete_all(ks, "g"))
    assert run_sync(redis, configs.get(ks, "g")) == {}


def test_an_alter_against_a_stale_read_writes_nothing(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    run_sync(redis, configs.alter(ks, "g", {"a": "1", "b": "2"}))
    read = run_sync(redis, configs.get(ks, "g"))
    run_sync(redis, configs.alter(ks, "g", {"b": "3"}))  # another broker, meanwhile
    assert not run_sync(redis, configs.alter(ks, "g", {"c": "4"}, ["a"], expected=read))
    assert run_sync(redis, configs.get(ks, "g")) == {"a": "1", "b": "3"}
    # A missing name or an extra one differs too; the hash as read succeeds.
    assert not run_sync(redis, configs.alter(ks, "g", {"c": "4"}, expected={"a": "1"}))
    assert not run_sync(redis, configs.alter(ks, "g", {"c": "4"}, expected={"a": "1", "b": "3", "x": "0"}))
    assert not run_sync(redis, configs.alter(ks, "fresh", {"c": "4"}, expected={"a": "1"}))
    assert run_sync(redis, configs.alter(ks, "g", {"c": "4"}, ["a"], expected={"a": "1", "b": "3"}))
    assert run_sync(redis, configs.get(ks, "g")) == {"b": "3", "c": "4"}
    assert run_sync(redis, configs.alter(ks, "fresh", {"c": "4"}, expected={}))
    assert run_sync(redis, configs.get(ks, "fresh")) == {"c": "4"}


def test_deleting_the_group_leaves_its_configs(redis_server: Any, keyspace: str) -> None:
    """As in Kafka: DeleteGroups removes the group's state and offsets, not its configs."""
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    run_sync(redis, state.claim(ks, "g", 1))
    run_sync(redis, configs.alter(ks, "g", {"share.auto.offset.reset": "earliest"}))
    assert drive_sync(redis, state.delete(ks, "g")) == 1
    assert run_sync(redis, configs.get(ks, "g")) == {"share.auto.offset.reset": "earliest"}
