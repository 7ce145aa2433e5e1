"""Share partitions on Redis consumer groups (storage/share/partition.py): acquisition, the four
acknowledgement types, lock expiry, the delivery count limit, the in-flight window, dead letters, the
start offset, and resets; on both offset encodings."""

from __future__ import annotations

import time
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import transactions
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.log.entry import Record, parse_fields
from schooner.storage.mq import dead_letters
from schooner.storage.share import partition as share
from schooner.storage.share.partition import ACCEPT, GAP, REJECT, RELEASE, RENEW, AckBatch, Limits
from schooner.storage.topics.metadata import Topic

from .conftest import run

pytestmark = pytest.mark.both_encodings

G = "sg"
LIMITS = Limits(lock_ms=30_000, delivery_limit=3, max_locks=100, read_committed=False, dead_letters=True)


def _append(redis: Any, ks: Keyspace, topic: Topic, *values: bytes) -> list[int]:
    """Appends to partition 0; returns the offsets of every entry there (time-packed ones are sparse)."""
    records = [Record(int(time.time() * 1000), b"k", v) for v in values]
    assert run(redis, log_append.append(ks, topic, 0, RecordBatch(records))).status == APPENDED
    return [topic.offsets.offset_of_id(e[0]) for e in redis.xrange(ks.stream("jobs", 0))]


def _acquire(redis: Any, ks: Keyspace, topic: Topic, member: str, n: int = 10, limits: Limits = LIMITS,
             start: str = "0") -> share.Acquired:  # fmt: skip
    got = run(redis, share.acquire(ks, topic, 0, G, member, n, limits, start))
    assert got.status == 0
    return got


def _offsets(topic: Topic, got: share.Acquired) -> list[int]:
    return [topic.offsets.offset_of_id(e[0]) for e in got.entries]


def _values(got: share.Acquired) -> list[bytes | None]:
    return [parse_fields(f)[2] for _, f in got.entries]


def _ack(redis: Any, ks: Keyspace, topic: Topic, member: str, first: int, last: int, *types: int,
         limits: Limits = LIMITS) -> share.Acknowledged:  # fmt: skip
    return run(redis, share.acknowledge(ks, topic, 0, G, member, [AckBatch(first, last, types)], limits))


def test_each_record_goes_to_one_member_and_accept_settles_it(redis: Any, ks: Keyspace, topic: Topic) -> None:
    o = _append(redis, ks, topic, b"a", b"b", b"c", b"d")
    first = _acquire(redis, ks, topic, "m1", 2)
    second = _acquire(redis, ks, topic, "m2", 10)
    assert first.created and not second.created
    assert _values(first) == [b"a", b"b"] and _values(second) == [b"c", b"d"]
    assert first.deliveries == [1, 1]
    assert _offsets(topic, first) == o[:2]
    assert _ack(redis, ks, topic, "m1", o[0], o[1], ACCEPT).settled == 2
    assert _acquire(redis, ks, topic, "m3").entries == []
    state = run(redis, share.state(ks, topic, 0, G))
    assert (state.start_offset, state.in_flight, state.archived) == (o[2], 2, 0)
    assert _ack(redis, ks, topic, "m2", o[2], o[3], ACCEPT).ok
    assert run(redis, share.state(ks, topic, 0, G)).start_offset == o[3] + 1


def test_release_redelivers_with_count_two_and_reject_never(redis: Any, ks: Keyspace, topic: Topic) -> None:
    o = _append(redis, ks, topic, b"a", b"b")
    _acquire(redis, ks, topic, "m1")
    assert _ack(redis, ks, topic, "m1", o[0], o[0], RELEASE).ok
    assert _ack(redis, ks, topic, "m1", o[1], o[1], REJECT).ok
    again = _acquire(redis, ks, topic, "m2")
    assert _values(again) == [b"a"] and again.deliveries == [2]
    assert _acquire(redis, ks, topic, "m3").entries == []
    state = run(redis, share.state(ks, topic, 0, G))
    assert (state.in_flight, state.archived, state.dead_lettered) == (1, 1, 1)
    (letter,) = run(redis, dead_letters.read(ks, "jobs", 0))
    assert (letter.group, letter.value, letter.error_type) == (G, b"b", "rejected")
    assert letter.origin_offset == o[1]


def test_an_offset_not_acquired_by_the_member_settles_nothing(redis: Any, ks: Keyspace, topic: Topic) -> None:
    o = _append(redis, ks, topic, b"a", b"b")
    _acquire(redis, ks, topic, "m1", 1)
    _acquire(redis, ks, topic, "m2", 1)
    assert not _ack(redis, ks, topic, "m2", o[0], o[1], ACCEPT).ok  # the first is m1's
    assert not _ack(redis, ks, topic, "m1", o[0], o[1] + 5, ACCEPT).ok  # the second is m2's
    assert run(redis, share.state(ks, topic, 0, G)).in_flight == 2
    assert _ack(redis, ks, topic, "m1", o[0], o[0], ACCEPT).ok
    assert not _ack(redis, ks, topic, "m1", o[0], o[0], ACCEPT).ok  # settled already
    assert _ack(redis, ks, topic, "m2", o[1], o[1] + 1, ACCEPT, GAP).ok  # a gap past the end is fine


def test_an_expired_lock_makes_the_record_available(redis: Any, ks: Keyspace, topic: Topic) -> None:
    short = Limits(lock_ms=200, delivery_limit=3, max_locks=100, read_committed=False, dead_letters=False)
    (o,) = _append(redis, ks, topic, b"a")
    _acquire(redis, ks, topic, "m1", limits=short)
    assert _acquire(redis, ks, topic, "m2", limits=short).entries == []
    time.sleep(0.25)
    again = _acquire(redis, ks, topic, "m2", limits=short)
    assert again.deliveries == [2]
    assert not _ack(redis, ks, topic, "m1", o, o, ACCEPT, limits=short).ok  # m1 lost it
    time.sleep(0.1)
    assert _ack(redis, ks, topic, "m2", o, o, RENEW, limits=short).ok  # renewed: the lock starts over
    time.sleep(0.15)
    assert _acquire(redis, ks, topic, "m3", limits=short).entries == []
    assert _ack(redis, ks, topic, "m2", o, o, ACCEPT, limits=short).ok


def test_the_delivery_limit_archives_into_the_dead_letters(redis: Any, ks: Keyspace, topic: Topic) -> None:
    o = _append(redis, ks, topic, b"poison", b"fine")
    for n in (1, 2, 3):
        got = _acquire(redis, ks, topic, "m1", 1)
        assert _values(got) == [b"poison"] and got.deliveries == [n]
        assert _ack(redis, ks, topic, "m1", o[0], o[0], RELEASE).ok
    assert _values(_acquire(redis, ks, topic, "m1")) == [b"fine"]
    state = run(redis, share.state(ks, topic, 0, G))
    assert (state.archived, state.dead_lettered, state.start_offset) == (1, 1, o[1])
    (letter,) = run(redis, dead_letters.read(ks, "jobs", 0))
    assert (letter.value, letter.deliveries, letter.error_type) == (b"poison", 3, "delivery_limit")


def test_the_window_holds_at_most_max_locks_records(redis: Any, ks: Keyspace, topic: Topic) -> None:
    small = Limits(lock_ms=30_000, delivery_limit=3, max_locks=3, read_committed=False, dead_letters=False)
    o = _append(redis, ks, topic, *[b"v%d" % i for i in range(6)])
    assert len(_acquire(redis, ks, topic, "m1", 10, small).entries) == 3
    assert _acquire(redis, ks, topic, "m2", 10, small).entries == []
    assert _ack(redis, ks, topic, "m1", o[0], o[1], ACCEPT, limits=small).ok
    assert _offsets(topic, _acquire(redis, ks, topic, "m2", 10, small)) == o[3:5]


def test_latest_starts_at_the_end_and_reset_moves_the_start(redis: Any, ks: Keyspace, topic: Topic) -> None:
    (old,) = _append(redis, ks, topic, b"old")
    assert _acquire(redis, ks, topic, "m1", start="$").entries == []
    assert run(redis, share.state(ks, topic, 0, G)).start_offset == old + 1
    _append(redis, ks, topic, b"new")
    assert _values(_acquire(redis, ks, topic, "m1")) == [b"new"]
    assert run(redis, share.reset(ks, topic, 0, G, old)) == 1
    state = run(redis, share.state(ks, topic, 0, G))
    assert (state.start_offset, state.in_flight) == (old, 0)
    assert _values(_acquire(redis, ks, topic, "m1")) == [b"old", b"new"]
    assert run(redis, share.reset(ks, topic, 0, G, None)) == 1
    assert run(redis, share.state(ks, topic, 0, G)) is None
    assert run(redis, share.reset(ks, topic, 0, G, None)) == 0


def test_lag_counts_the_records_in_flight_and_not_yet_delivered(
    redis: Any, ks: Keyspace, topic: Topic, offset_encoding: str
) -> None:
    o = _append(redis, ks, topic, *[b"v%d" % i for i in range(6)])
    _acquire(redis, ks, topic, "m1", 2)
    assert run(redis, share.state(ks, topic, 0, G)).lag == 6  # two in flight, four to come
    assert _ack(redis, ks, topic, "m1", o[0], o[0], ACCEPT).ok
    assert run(redis, share.state(ks, topic, 0, G)).lag == 5
    assert run(redis, share.reset(ks, topic, 0, G, o[4])) == 1
    # dense offsets count records; Redis loses its own count after a start in mid-stream
    assert run(redis, share.state(ks, topic, 0, G)).lag == (2 if offset_encoding == "dense" else -1)
    _acquire(redis, ks, topic, "m1", 1)
    assert run(redis, share.state(ks, topic, 0, G)).lag == (2 if offset_encoding == "dense" else -1)


def test_read_committed_skips_aborted_records_and_waits_for_open_ones(
    redis: Any, ks: Keyspace, topic: Topic
) -> None:
    committed = Limits(
        lock_ms=30_000, delivery_limit=3, max_locks=100, read_committed=True, dead_letters=False
    )
    now = int(time.time() * 1000)

    def txn(pid: int, seq: int, *values: bytes) -> None:
        batch = RecordBatch([Record(now, None, v) for v in values], pid, 0, seq)
        assert (
            run(redis, log_append.append(ks, topic, 0, batch, transactional_id=f"tx-{pid}")).status
            == APPENDED
        )

    def end(pid: int, commit: bool) -> None:
        marker = transactions.write_marker(ks, topic, 0, pid, 0, commit)
        assert run(redis, marker).status == transactions.MARKER_WRITTEN

    _append(redis, ks, topic, b"plain")
    txn(7, 0, b"aborted")
    end(7, False)
    txn(8, 0, b"open")  # stays open: nothing at or past it is acquired yet
    _append(redis, ks, topic, b"after")
    assert _values(_acquire(redis, ks, topic, "m1", limits=committed)) == [b"plain"]
    end(8, True)
    assert _values(_acquire(redis, ks, topic, "m1", limits=committed)) == [b"open", b"after"]
