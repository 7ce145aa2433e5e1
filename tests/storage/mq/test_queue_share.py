"""An MQ group and a share group of the same name on one topic are one queue (docs/share-groups.md): a
share member (storage/share/partition.py) and an MQ member (storage/mq/queue.py, with a lease) on one
partition split its records, the MQ takeover claim leaves the share member's locked entries alone,
and the share side's dead letters are the MQ admin's to list and replay."""

from __future__ import annotations

import time
from typing import Any

import pytest

from schooner.mq.admin import Admin
from schooner.mq.message import GROUP as TARGET_GROUP
from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.log.entry import Record, parse_fields
from schooner.storage.mq import leases, queue
from schooner.storage.share import partition as share
from schooner.storage.share.partition import ACCEPT, REJECT, RELEASE, AckBatch, Limits
from schooner.storage.topics.metadata import Topic

from .conftest import GROUP, run

pytestmark = pytest.mark.both_encodings

LIMITS = Limits(lock_ms=30_000, delivery_limit=5, max_locks=100, read_committed=True, dead_letters=True)


def _append(redis: Any, ks: Keyspace, topic: Topic, *values: bytes) -> None:
    records = [Record(int(time.time() * 1000), b"k", v) for v in values]
    assert run(redis, log_append.append(ks, topic, 0, RecordBatch(records))).status == APPENDED


def _share_acquire(
    redis: Any, ks: Keyspace, topic: Topic, member: str, n: int, start: str = "0", limits: Limits = LIMITS
) -> share.Acquired:
    got = run(redis, share.acquire(ks, topic, 0, GROUP, member, n, limits, start))
    assert got.status == 0
    return got


def _share_ack(redis: Any, ks: Keyspace, topic: Topic, member: str, entry_id: bytes, kind: int) -> bool:
    offset = topic.offsets.offset_of_id(entry_id)
    batch = AckBatch(offset, offset, (kind,))
    return run(redis, share.acknowledge(ks, topic, 0, GROUP, member, [batch], LIMITS)).ok


def _mq_read(redis: Any, ks: Keyspace, topic: Topic, member: str, n: int) -> list[queue.Delivery]:
    reply = run(redis, queue.read(ks, topic, 0, GROUP, member, n))
    assert reply.status == 0
    return reply.entries


def _value(fields: list[Any]) -> bytes | None:
    return parse_fields(fields)[2]


def _holders(redis: Any, ks: Keyspace) -> dict[bytes, str]:
    return {p.entry_id: p.consumer for p in run(redis, queue.pending(ks, "jobs", 0, GROUP))}


def test_records_split_between_a_share_and_an_mq_member_each_once(
    redis: Any, ks: Keyspace, topic: Topic
) -> None:
    values = [b"r%d" % i for i in range(12)]
    _append(redis, ks, topic, *values)
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "mq1", 10_000))
    by_share: list[bytes | None] = []
    by_mq: list[bytes | None] = []
    for _ in range(10):
        got = _share_acquire(redis, ks, topic, "s1", 2, "$")  # the queue exists: "$" does not matter
        for entry_id, fields in got.entries:
            assert _share_ack(redis, ks, topic, "s1", entry_id, ACCEPT)
            by_share.append(_value(fields))
        read = _mq_read(redis, ks, topic, "mq1", 3)
        if read:
            run(redis, queue.ack(ks, "jobs", 0, GROUP, [d.entry_id for d in read]))
            by_mq += [_value(d.fields) for d in read]
        if not got.entries and not read:
            break
    assert by_share == [b"r0", b"r1", b"r5", b"r6", b"r10", b"r11"]
    assert by_mq == [b"r2", b"r3", b"r4", b"r7", b"r8", b"r9"]
    assert _holders(redis, ks) == {}
    assert run(redis, share.state(ks, topic, 0, GROUP)).in_flight == 0


def test_mq_takeover_claims_only_mq_entries(redis: Any, ks: Keyspace, topic: Topic) -> None:
    _append(redis, ks, topic, *[b"r%d" % i for i in range(8)])
    s_locked = _share_acquire(redis, ks, topic, "s1", 2).entries  # r0, r1: locked by s1
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "old", 10_000))
    old = _mq_read(redis, ks, topic, "old", 2)  # r2, r3
    s_more = _share_acquire(redis, ks, topic, "s1", 2).entries  # r4, r5
    assert _share_ack(redis, ks, topic, "s1", s_more[1][0], RELEASE)  # r5: released, no lock
    old += _mq_read(redis, ks, topic, "old", 1)  # r6
    assert [_value(d.fields) for d in old] == [b"r2", b"r3", b"r6"]
    run(redis, leases.release(ks, "jobs", 0, GROUP, "old"))
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "new", 10_000))

    first = run(redis, queue.claim(ks, topic, 0, GROUP, "new", b"0-0", 2))
    assert first.status == 0 and first.cursor != b"0-0"
    assert [d.entry_id for d in first.entries] == [d.entry_id for d in old[:2]]
    assert [d.deliveries for d in first.entries] == [2, 2]
    rest = run(redis, queue.claim(ks, topic, 0, GROUP, "new", first.cursor, 2))
    assert [d.entry_id for d in rest.entries] == [old[2].entry_id] and rest.cursor == b"0-0"
    assert rest.entries[0].deliveries == 2

    holders = _holders(redis, ks)
    share_ids = [e[0] for e in s_locked + s_more]
    assert {i: holders[i] for i in share_ids} == dict.fromkeys(share_ids, "share:s1")
    assert {i for i, c in holders.items() if c == "new"} == {d.entry_id for d in old}
    # The share member still holds its locks: it settles them, and nobody else acquires them.
    taken = _share_acquire(redis, ks, topic, "s2", 10)  # the released r5, then the new r7
    assert [_value(f) for _, f in taken.entries] == [b"r5", b"r7"] and taken.deliveries == [2, 1]
    assert _share_ack(redis, ks, topic, "s1", s_locked[0][0], ACCEPT)
    assert _share_ack(redis, ks, topic, "s1", s_locked[1][0], REJECT)
    assert _share_ack(redis, ks, topic, "s1", s_more[0][0], ACCEPT)


def test_takeover_cursor_steps_over_a_long_run_of_share_entries(
    redis: Any, ks: Keyspace, topic: Topic
) -> None:
    _append(redis, ks, topic, *[b"r%d" % i for i in range(30)])
    ((done, _),) = _share_acquire(redis, ks, topic, "s0", 1).entries
    assert _share_ack(redis, ks, topic, "s0", done, ACCEPT)  # s0 holds nothing now
    assert len(_share_acquire(redis, ks, topic, "s1", 25).entries) == 25
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "old", 10_000))
    old = _mq_read(redis, ks, topic, "old", 5)
    run(redis, leases.release(ks, "jobs", 0, GROUP, "old"))
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "new", 10_000))
    cursor, claimed, calls = b"0-0", [], 0
    while True:
        reply = run(redis, queue.claim(ks, topic, 0, GROUP, "new", cursor, 2))
        claimed += [_value(d.fields) for d in reply.entries]
        cursor, calls = reply.cursor, calls + 1
        if cursor == b"0-0":
            break
    assert claimed == [_value(d.fields) for d in old] == [b"r26", b"r27", b"r28", b"r29"]
    assert calls == 3  # the first call looks at 20 entries, all share ones, and hands back a cursor
    consumers = redis.execute_command("XINFO", "CONSUMERS", ks.stream("jobs", 0), GROUP)
    names = sorted((c.get("name") or c.get(b"name")).decode() for c in consumers)
    assert names == ["new", "share:s0", "share:s1"]  # the departed MQ member is gone, share ones stay


def test_share_dead_letter_is_listed_and_replayed_by_mq_admin(redis: Any, ks: Keyspace, topic: Topic) -> None:
    _append(redis, ks, topic, b"keep", b"bad")
    got = _share_acquire(redis, ks, topic, "s1", 2)
    assert _share_ack(redis, ks, topic, "s1", got.entries[0][0], ACCEPT)
    assert _share_ack(redis, ks, topic, "s1", got.entries[1][0], REJECT)
    admin = Admin(redis, keyspace=ks)
    (letter,) = admin.dead_letters("jobs")
    assert (letter.group, letter.value, letter.error_type) == (GROUP, b"bad", "rejected")
    assert letter.origin_offset == topic.offsets.offset_of_id(got.entries[1][0])
    assert admin.dead_letter_count("jobs") == 1

    assert admin.replay("jobs", letter.letter_id) is True
    assert admin.dead_letters("jobs") == [] and admin.retries("jobs") == []
    # Back on its partition for the queue: here the MQ member gets it, as the group's own replay.
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "mq1", 10_000))
    (again,) = _mq_read(redis, ks, topic, "mq1", 10)
    _, _, value, headers = parse_fields(again.fields)
    assert value == b"bad" and (TARGET_GROUP, GROUP.encode()) in headers
    assert _share_acquire(redis, ks, topic, "s1", 10).entries == []


def test_mq_admin_shows_the_share_group_and_its_holders(redis: Any, ks: Keyspace, topic: Topic) -> None:
    _append(redis, ks, topic, b"a", b"b")
    run(redis, share.register_topics(ks, GROUP, ["jobs"]))
    (entry_id, _), _ = _share_acquire(redis, ks, topic, "s1", 2).entries
    admin = Admin(redis, keyspace=ks)
    (group,) = admin.groups("jobs")
    assert (group.name, group.members, group.share) == (GROUP, [], True)
    assert group.partitions[0] is not None and group.partitions[0].pending == 2
    pending = admin.pending("jobs", GROUP)
    assert [(m.entry_id.encode(), m.consumer) for m in pending][:1] == [(entry_id, "share:s1")]
    assert {m.consumer for m in pending} == {"share:s1"} and len(pending) == 2
    admin.create_group("jobs", "mq-only")
    kinds = {g.name: g.share for g in admin.groups("jobs")}
    assert kinds == {GROUP: True, "mq-only": False}


def test_delivery_counts_are_one_counter_and_a_held_lease_guards_mq_entries(
    redis: Any, ks: Keyspace, topic: Topic
) -> None:
    _append(redis, ks, topic, b"a", b"b")
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "mq1", 300))
    (read,) = _mq_read(redis, ks, topic, "mq1", 1)  # a; then mq1 dies
    short = Limits(lock_ms=100, delivery_limit=5, max_locks=100, read_committed=True, dead_letters=True)
    time.sleep(0.15)  # past the lock duration, but mq1's lease still holds: only b is the share side's
    got = _share_acquire(redis, ks, topic, "s1", 10, limits=short)
    assert [_value(f) for _, f in got.entries] == [b"b"]
    time.sleep(0.3)  # the lease lapses: a is anyone's, with its delivery counted
    taken = _share_acquire(redis, ks, topic, "s2", 10, limits=short)
    assert [e[0] for e in taken.entries][0] == read.entry_id and taken.deliveries == [2, 2]
    assert set(_holders(redis, ks).values()) == {"share:s2"}


def test_deleting_the_mq_group_or_resetting_the_share_group_restarts_the_queue(
    redis: Any, ks: Keyspace, topic: Topic
) -> None:
    _append(redis, ks, topic, b"a", b"b")
    assert len(_share_acquire(redis, ks, topic, "s1", 1).entries) == 1
    assert run(redis, share.state(ks, topic, 0, GROUP)) is not None
    admin = Admin(redis, keyspace=ks)
    admin.delete_group("jobs", GROUP)
    assert run(redis, share.state(ks, topic, 0, GROUP)) is None
    assert not redis.exists(ks.share_partition("jobs", 0, GROUP))
    admin.create_group("jobs", GROUP, "earliest")
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "mq1", 10_000))
    assert len(_mq_read(redis, ks, topic, "mq1", 1)) == 1
    second = topic.offsets.offset_of_id(redis.xrange(ks.stream("jobs", 0))[1][0])
    assert run(redis, share.reset(ks, topic, 0, GROUP, second)) == 1
    assert _holders(redis, ks) == {}  # what the MQ member held is not pending any more
    assert [_value(d.fields) for d in _mq_read(redis, ks, topic, "mq1", 10)] == [b"b"]
