"""BlockingStore on a real redis-server: it runs the sub-packages' round trips on one client and keyspace
(topics, the log, repair, users, the MQ queues' groups, the server), as the MQ library, Spark and the
CLI use it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from schooner.storage.blocking_store import BlockingStore
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.mq import queue
from schooner.storage.security.users import User
from tests.conftest import redis_for


@pytest.fixture
def store(redis_server: Any, keyspace: str) -> Iterator[BlockingStore]:
    made = BlockingStore.connect(redis_server.url, keyspace)
    yield made
    made.close()


def _batch(*values: bytes) -> RecordBatch:
    now = int(time.time() * 1000)
    return RecordBatch([Record(now, None, v) for v in values])


def test_topics_appends_and_reads(store: BlockingStore) -> None:
    assert store.topic("t") is None
    topic = store.create_topic("t", 2, {"cleanup.policy": "delete"})
    assert store.topic("t") == topic and [t.name for t in store.topics()] == ["t"]
    assert store.append(topic, 1, _batch(b"a", b"b")).status == APPENDED
    (b0, b1) = store.bounds_of([(topic, 0), (topic, 1)])
    assert (b0.high_watermark, b1.high_watermark) == (0, 2)
    entries, bounds = store.read_range_and_bounds(topic, 1, 0, 2, 10)
    assert len(entries) == 2 and bounds == b1
    assert store.next_ends([(topic, 1, 0, 2, 1)]) == [(1, 1)]
    assert store.stable_bounds_of([(topic, 1)]) == [(b1, 2)]


def test_a_plain_xadd_needs_repair_until_renumbered(store: BlockingStore, redis_server: Any) -> None:
    topic = store.create_topic("dense", 1, {})
    assert store.append(topic, 0, _batch(b"a")).status == APPENDED
    assert not store.needs_repair("dense", 0)
    redis_for(redis_server.url).xadd(store.ks.stream("dense", 0), {"value": b"plain"})
    assert store.needs_repair("dense", 0)
    assert store.renumber(topic, 0).high_watermark == 2
    assert not store.needs_repair("dense", 0)


def test_users_under_its_keyspace(store: BlockingStore) -> None:
    assert store.user("alice") is None
    store.put_user(User("alice", tenant="acme"))
    assert store.user("alice") == User("alice", tenant="acme")
    assert [u.name for u in store.users()] == ["alice"]
    store.delete_user("alice")
    assert store.users() == []


def test_an_mq_group_is_registered_and_deleted_with_its_state(store: BlockingStore) -> None:
    topic = store.create_topic("jobs", 2, {})
    store.mq_create_group(topic, range(2), "workers", queue.EARLIEST)
    assert store.mq_group_names("jobs") == ["workers"]
    assert [[g.name for g in per] for per in store.mq_groups("jobs", range(2))] == [["workers"], ["workers"]]
    assert store.mq_owners("jobs", range(2), "workers") == [(None, -2), (None, -2)]
    store.mq_delete_group("jobs", range(2), "workers")
    assert store.mq_group_names("jobs") == [] and store.mq_groups("jobs", range(2)) == [[], []]


def test_the_server(store: BlockingStore) -> None:
    assert store.server()["redis_version"]
    assert store.memory().used > 0
