"""Committed offsets are fenced by the group's owner epoch, in one script."""

from __future__ import annotations

from typing import Any

from schooner.storage.groups import commits, state
from schooner.storage.groups.commits import Owner
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync


def test_a_broker_that_lost_the_group_cannot_commit(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    first = Owner(1, run_sync(redis, state.claim(ks, "g", 1))["owner_epoch"])
    assert drive_sync(redis, commits.commit(ks, "g", first, {("t", 0): (5, -1, None)}))
    second = Owner(2, run_sync(redis, state.claim(ks, "g", 2))["owner_epoch"])
    assert second.epoch != first.epoch
    # The old owner's commit is refused and writes nothing; the new owner's is stored.
    assert not drive_sync(
        redis, commits.commit(ks, "g", first, {("t", 0): (9, -1, None), ("t", 1): (3, -1, None)})
    )
    assert {tp: c.offset for tp, c in drive_sync(redis, commits.fetch(ks, "g")).items()} == {("t", 0): 5}
    assert drive_sync(redis, commits.commit(ks, "g", second, {("t", 0): (7, 2, "m")}))
    stored = drive_sync(redis, commits.fetch(ks, "g", [("t", 0), ("t", 1)]))
    assert list(stored) == [("t", 0)]
    assert (stored[("t", 0)].offset, stored[("t", 0)].leader_epoch, stored[("t", 0)].metadata) == (7, 2, "m")
    assert "g" in run_sync(redis, state.list_ids(ks))


def test_a_stale_owner_epoch_of_the_same_broker_is_refused(redis_server: Any, keyspace: str) -> None:
    """A broker that lost the group and claimed it again holds a new epoch; its old state must not write."""
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    old = Owner(1, run_sync(redis, state.claim(ks, "g", 1))["owner_epoch"])
    new = Owner(1, run_sync(redis, state.claim(ks, "g", 1))["owner_epoch"])
    assert not drive_sync(redis, commits.commit(ks, "g", old, {("t", 0): (1, -1, None)}))
    assert drive_sync(redis, commits.commit(ks, "g", new, {("t", 0): (2, -1, None)}))
    assert drive_sync(redis, commits.delete_offsets(ks, "g", [("t", 0)])) == 1
    assert drive_sync(redis, commits.fetch(ks, "g")) == {}
