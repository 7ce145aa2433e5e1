"""Idempotent producers' state: its time, DescribeProducers' reading of it, and expiry, against a real
redis-server."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.log import append, producers
from schooner.storage.log.append import APPENDED, DUPLICATE, RecordBatch
from schooner.storage.redis import client
from schooner.storage.redis.calls import BlockingRedis, drive_sync, run_sync
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic


class R:
    def __init__(self, value: bytes) -> None:
        self.value = value
        self.key: bytes | None = None
        self.timestamp = 1_700_000_000_000
        self.headers: list[tuple[str, bytes | None]] = []


@pytest.fixture
def conn(redis_server) -> Iterator[BlockingRedis]:
    c = client.connect_sync(redis_server.url)
    yield c
    c.close()


@pytest.fixture
def ks(keyspace: str) -> Keyspace:
    return Keyspace(keyspace)


@pytest.fixture
def topic(conn: BlockingRedis, ks: Keyspace) -> Topic:
    return drive_sync(conn, metadata.create(ks, "t", 2, {}, {}))


def _send(conn: BlockingRedis, ks: Keyspace, t: Topic, pid: int, epoch: int, seq: int, n: int = 1) -> int:
    batch = RecordBatch([R(b"v")] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    return run_sync(conn, append.append(ks, t, 0, batch)).status


def _redis_ms(conn: BlockingRedis) -> int:
    seconds, micros = conn.time()
    return int(seconds) * 1000 + int(micros) // 1000


def test_the_append_keeps_each_producers_last_append_time(
    conn: BlockingRedis, ks: Keyspace, topic: Topic
) -> None:
    before = _redis_ms(conn)
    assert _send(conn, ks, topic, 7, 0, 0, n=3) == APPENDED
    assert _send(conn, ks, topic, 7, 0, 3, n=2) == APPENDED
    assert _send(conn, ks, topic, 9, 2, 0) == APPENDED
    after = _redis_ms(conn)
    states = run_sync(conn, producers.states(ks, topic, 0))
    assert [(s.producer_id, s.producer_epoch, s.last_sequence) for s in states] == [(7, 0, 4), (9, 2, 0)]
    assert all(before <= s.last_append_ms <= after for s in states)
    index = conn.zrange(ks.producers("t", 0), 0, -1, withscores=True)
    assert {(int(m), int(score)) for m, score in index} == {(s.producer_id, s.last_append_ms) for s in states}
    assert run_sync(conn, producers.states(ks, topic, 1)) == []


def test_idle_producers_expire_and_active_ones_stay(conn: BlockingRedis, ks: Keyspace, topic: Topic) -> None:
    for pid in (1, 2, 3):
        assert _send(conn, ks, topic, pid, 0, 0) == APPENDED
    assert drive_sync(conn, producers.expire(ks, topic, 0, 60_000)) == 0  # none idle a minute yet
    time.sleep(0.3)
    assert _send(conn, ks, topic, 2, 0, 1) == APPENDED  # producer 2 stays active
    assert drive_sync(conn, producers.expire(ks, topic, 0, 200)) == 2
    assert [s.producer_id for s in run_sync(conn, producers.states(ks, topic, 0))] == [2]
    assert [int(m) for m in conn.zrange(ks.producers("t", 0), 0, -1)] == [2]
    # A forgotten producer starts afresh: any sequence is taken, as for a producer never seen.
    assert _send(conn, ks, topic, 1, 0, 5) == APPENDED
    time.sleep(0.3)
    assert drive_sync(conn, producers.expire(ks, topic, 0, 200)) == 2
    assert not conn.exists(ks.producers("t", 0))
    state = conn.hgetall(ks.partition_state("t", 0))
    assert not [f for f in state if f.startswith(b"producer:")]


def test_expiry_runs_in_chunks_and_compacts_what_is_left(
    conn: BlockingRedis, ks: Keyspace, topic: Topic
) -> None:
    count = producers.EXPIRE_CHUNK * 2 + 5
    pipe = conn.pipeline(transaction=False)
    for pid in range(count):  # entries as the append script writes them, a minute old
        pipe.hset(ks.partition_state("t", 0), f"producer:{pid}", "0,1;0,0,1,0,1,0")
        pipe.zadd(ks.producers("t", 0), {str(pid): _redis_ms(conn) - 60_000})
    pipe.execute()
    assert _send(conn, ks, topic, count, 0, 0) == APPENDED  # one that stays
    state, index = ks.partition_state("t", 0), ks.producers("t", 0)
    assert (conn.object("encoding", state), conn.object("encoding", index)) == (b"hashtable", b"skiplist")
    assert drive_sync(conn, producers.expire(ks, topic, 0, 1000)) == count
    assert [s.producer_id for s in run_sync(conn, producers.states(ks, topic, 0))] == [count]
    # What is left is written anew: compact again, not a table sized for thousands.
    assert (conn.object("encoding", state), conn.object("encoding", index)) == (b"listpack", b"listpack")
    assert conn.hget(state, "topic_id") == str(topic.id).encode()


def test_entries_written_before_expiry_are_dated_on_first_sight(
    conn: BlockingRedis, ks: Keyspace, topic: Topic
) -> None:
    state = ks.partition_state("t", 0)
    old_format = "3;0,1,1700000000000,0,1700000000000,1"  # epoch; one batch; no time
    conn.hset(state, mapping={"producer:41": old_format, "producer:42": old_format})
    # It still parses, with no time to report.
    assert [
        (s.producer_id, s.producer_epoch, s.last_sequence, s.last_append_ms)
        for s in run_sync(conn, producers.states(ks, topic, 0))
    ] == [(41, 3, 1, -1), (42, 3, 1, -1)]
    # The producer's own next append reads it (a retry is still a duplicate) and dates it.
    assert _send(conn, ks, topic, 41, 3, 0, n=2) == DUPLICATE
    assert _send(conn, ks, topic, 41, 3, 2) == APPENDED
    before = _redis_ms(conn)
    assert drive_sync(conn, producers.expire(ks, topic, 0, 60_000)) == 0
    dated = {s.producer_id: s.last_append_ms for s in run_sync(conn, producers.states(ks, topic, 0))}
    assert dated[42] >= before  # the first expiry pass counts it as used now, not as expired
    assert conn.hget(state, "producer_scan") == b"done"
    assert conn.zscore(ks.producers("t", 0), "42") == dated[42]
    time.sleep(0.3)
    assert drive_sync(conn, producers.expire(ks, topic, 0, 200)) == 2


def test_expiry_leaves_a_deleted_partition_absent(conn: BlockingRedis, ks: Keyspace, topic: Topic) -> None:
    assert _send(conn, ks, topic, 5, 0, 0) == APPENDED
    drive_sync(conn, metadata.delete(ks, "t"))
    assert not conn.exists(ks.producers("t", 0))
    assert drive_sync(conn, producers.expire(ks, topic, 0, 1)) == 0
    assert not conn.exists(ks.partition_state("t", 0), ks.producers("t", 0))


def test_parse_entry() -> None:
    s = producers.parse_entry(12, "4,1700000000123;0,9,1,0,1,9;10,19,2,0,2,9")
    assert (s.producer_id, s.producer_epoch, s.last_sequence, s.last_append_ms) == (12, 4, 19, 1700000000123)
