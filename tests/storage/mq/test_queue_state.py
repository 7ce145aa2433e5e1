"""The MQ library's storage round trips and scripts, against a real redis-server."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.mq import admin as queue_admin
from schooner.storage.mq import dead_letters, leases, queue, retries
from schooner.storage.mq.dead_letters import DeadLetter
from schooner.storage.redis import calls, client
from schooner.storage.topics.metadata import Topic

from .conftest import GROUP, run


def append(redis: Any, ks: Keyspace, topic: Topic, *values: bytes, partition: int = 0) -> list[bytes]:
    records = [Record(int(time.time() * 1000), b"k", v, [("h", b"1")]) for v in values]
    result = run(redis, log_append.append(ks, topic, partition, RecordBatch(records)))
    assert result.status == APPENDED
    entries = redis.execute_command("XRANGE", ks.stream(topic.name, partition), "-", "+")
    return [e[0] for e in entries][-len(values) :]


def deliver(redis: Any, ks: Keyspace, topic: Topic, member: str = "m1", partition: int = 0) -> list[Any]:
    assert run(redis, leases.acquire(ks, topic.name, partition, GROUP, member, 10_000))
    return run(redis, queue.read(ks, topic, partition, GROUP, member, 100)).entries


def tag(key: str) -> str:
    found = re.search(r"\{([^}]*)\}", key)
    assert found, key
    return found.group(1)


def test_every_mq_script_touches_one_hash_tag(ks: Keyspace, topic: Topic) -> None:
    letter = DeadLetter("jobs", 1, 5, GROUP, 1, 1, 0, 0, "E", "m", 0, None, b"v")
    record = Record(0, None, b"v")
    scripted = [
        leases.acquire(ks, "jobs", 1, GROUP, "m", 1),
        leases.renew(ks, "jobs", 1, GROUP, "m", 1),
        leases.release(ks, "jobs", 1, GROUP, "m"),
        leases.heartbeat(ks, "jobs", GROUP, "m", 1),
        queue.create_group(ks, topic, 1, GROUP),
        queue.read(ks, topic, 1, GROUP, "m", 1),
        queue.claim(ks, topic, 1, GROUP, "m", b"0-0", 1),
        retries.schedule(ks, "jobs", 1, GROUP, b"1-0", 0, record),
        retries.take_due(ks, "jobs", 1),
        retries.confirm(ks, "jobs", 1, 0, 0),
        dead_letters.add(ks, GROUP, b"1-0", letter),
        dead_letters.replay_to_origin(ks, letter, record),
        queue_admin.lag(ks, "jobs", 1, GROUP),
        queue_admin.trim(ks, topic, 1, 0),
        log_append.append(ks, topic, 1, RecordBatch([record])),
    ]
    for call in scripted:
        assert call.script and len({tag(k) for k in call.keys}) == 1, call.script
    assert tag(ks.mq_lease("jobs", 1, GROUP)) == tag(ks.stream("jobs", 1)) == "jobs:1"
    assert tag(ks.mq_members("jobs", GROUP)) == tag(ks.mq_groups("jobs")) == "jobs"


def test_lease_is_exclusive_and_only_its_owner_renews_or_releases(redis: Any, ks: Keyspace) -> None:
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "a", 300))
    assert not run(redis, leases.acquire(ks, "jobs", 0, GROUP, "b", 300))
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "a", 300))  # its own: extended
    assert not run(redis, leases.renew(ks, "jobs", 0, GROUP, "b", 300))
    assert not run(redis, leases.release(ks, "jobs", 0, GROUP, "b"))
    assert run(redis, leases.holder(ks, "jobs", 0, GROUP)) == "a"
    assert run(redis, leases.renew(ks, "jobs", 0, GROUP, "a", 5000))
    assert run(redis, leases.remaining_ms(ks, "jobs", 0, GROUP)) > 300
    assert run(redis, leases.release(ks, "jobs", 0, GROUP, "a"))
    assert run(redis, leases.holder(ks, "jobs", 0, GROUP)) is None
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "b", 200))
    time.sleep(0.3)  # b's lease lapses: a takes over, and b can no longer renew
    assert run(redis, leases.acquire(ks, "jobs", 0, GROUP, "a", 1000))
    assert not run(redis, leases.renew(ks, "jobs", 0, GROUP, "b", 1000))


def test_heartbeat_drops_lapsed_members(redis: Any, ks: Keyspace) -> None:
    assert run(redis, leases.heartbeat(ks, "jobs", GROUP, "b", 150)) == ["b"]
    assert run(redis, leases.heartbeat(ks, "jobs", GROUP, "a", 5000)) == ["a", "b"]
    time.sleep(0.2)
    assert run(redis, leases.heartbeat(ks, "jobs", GROUP, "a", 5000)) == ["a"]
    assert run(redis, leases.groups(ks, "jobs")) == [GROUP]


def test_read_needs_the_lease_and_the_group(redis: Any, ks: Keyspace, topic: Topic) -> None:
    append(redis, ks, topic, b"one")
    assert run(redis, queue.read(ks, topic, 0, GROUP, "m1", 10)).status == queue.LEASE_LOST
    run(redis, leases.acquire(ks, "jobs", 0, GROUP, "m1", 10_000))
    assert run(redis, queue.read(ks, topic, 0, GROUP, "m1", 10)).status == queue.NO_GROUP
    assert run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST)) == 1
    assert run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST)) == 0
    got = run(redis, queue.read(ks, topic, 0, GROUP, "m1", 10))
    assert got.status == 0 and [d.deliveries for d in got.entries] == [1]
    assert run(redis, queue.read(ks, topic, 0, GROUP, "m1", 10)).entries == []


def test_group_is_not_created_for_a_deleted_topic(redis: Any, ks: Keyspace, topic: Topic) -> None:
    stale = Topic(topic.name, __import__("uuid").uuid4(), 2, topic.offsets, {}, topic.configs)
    assert run(redis, queue.create_group(ks, stale, 0, GROUP)) == queue.NOT_THIS_TOPIC


def test_claim_takes_a_departed_members_pending_entries_with_counts(
    redis: Any, ks: Keyspace, topic: Topic
) -> None:
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    ids = append(redis, ks, topic, b"a", b"b", b"c")
    assert len(deliver(redis, ks, topic, "old")) == 3
    run(redis, leases.release(ks, "jobs", 0, GROUP, "old"))
    assert run(redis, queue.claim(ks, topic, 0, GROUP, "new", b"0-0", 10)).status == queue.LEASE_LOST
    run(redis, leases.acquire(ks, "jobs", 0, GROUP, "new", 10_000))
    first = run(redis, queue.claim(ks, topic, 0, GROUP, "new", b"0-0", 2))
    assert [d.entry_id for d in first.entries] == ids[:2] and first.cursor != b"0-0"
    rest = run(redis, queue.claim(ks, topic, 0, GROUP, "new", first.cursor, 2))
    assert [d.entry_id for d in rest.entries] == ids[2:] and rest.cursor == b"0-0"
    assert {d.deliveries for d in first.entries + rest.entries} == {2}
    assert {p.consumer for p in run(redis, queue.pending(ks, "jobs", 0, GROUP))} == {"new"}
    consumers = redis.execute_command("XINFO", "CONSUMERS", ks.stream("jobs", 0), GROUP)
    assert [c.get("name") or c.get(b"name") for c in consumers] == [
        b"new"
    ]  # the departed member's empty entry is gone


def test_retry_schedule_acks_and_schedules_in_one_step_once(redis: Any, ks: Keyspace, topic: Topic) -> None:
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    (entry_id,) = append(redis, ks, topic, b"x")
    deliver(redis, ks, topic)
    record = Record(7, b"k", b"x", [("attempt", b"2")])
    due = run(redis, retries.schedule(ks, "jobs", 0, GROUP, entry_id, 60_000, record))
    assert due > time.time() * 1000 + 50_000
    assert run(redis, queue.pending(ks, "jobs", 0, GROUP)) == []
    assert run(redis, retries.scheduled(ks, "jobs", 0)) == [(retries.retry_id(GROUP, entry_id), due)]
    # Settled already (e.g. by a member that took over): a second schedule changes nothing.
    assert run(redis, retries.schedule(ks, "jobs", 0, GROUP, entry_id, 0, record)) == 0
    assert run(redis, retries.scheduled(ks, "jobs", 0)) == [(retries.retry_id(GROUP, entry_id), due)]
    assert retries.unpack(retries.pack(record)) == record
    assert retries.unpack(retries.pack(Record(1, None, None, [("n", None)]))) == Record(
        1, None, None, [("n", None)]
    )


def _schedule_due(redis: Any, ks: Keyspace, topic: Topic, *values: bytes) -> None:
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    ids = append(redis, ks, topic, *values)
    deliver(redis, ks, topic)
    for entry_id, v in zip(ids, values, strict=True):
        run(redis, retries.schedule(ks, "jobs", 0, GROUP, entry_id, 0, Record(5, b"k", b"retry-" + v)))


def _values(redis: Any, ks: Keyspace) -> list[bytes]:
    entries = redis.execute_command("XRANGE", ks.stream("jobs", 0), "-", "+")
    return [dict(zip(e[1][::2], e[1][1::2], strict=True)).get(b"value", b"") for e in entries]


@pytest.mark.parametrize("crash_after", [1, 2, 3, 4])
def test_a_mover_that_crashes_anywhere_appends_each_retry_exactly_once(
    redis: Any, ks: Keyspace, topic: Topic, crash_after: int
) -> None:
    """Round trips of a move: claim, producer id (2, the first time), append, confirm. Stop after any."""
    _schedule_due(redis, ks, topic, b"a", b"b")
    mover = retries.move_due(ks, topic, 0)
    replies: Any = None
    for _ in range(crash_after):
        replies = calls.run_many_sync(redis, mover.send(replies))
    mover.close()  # the crash: whatever came next never happens
    assert calls.drive_sync(redis, retries.move_due(ks, topic, 0)) in (0, 2)
    assert calls.drive_sync(redis, retries.move_due(ks, topic, 0)) == 0
    assert _values(redis, ks) == [b"a", b"b", b"retry-a", b"retry-b"]
    assert run(redis, retries.scheduled(ks, "jobs", 0)) == []
    assert redis.hlen(ks.mq_retry_payloads("jobs", 0)) == 0


def test_two_movers_racing_append_once(redis: Any, ks: Keyspace, topic: Topic) -> None:
    _schedule_due(redis, ks, topic, b"a")
    one, two = retries.move_due(ks, topic, 0), retries.move_due(ks, topic, 0)
    r1 = calls.run_many_sync(redis, one.send(None))
    r2 = calls.run_many_sync(redis, two.send(None))
    assert calls.drive_sync(redis, _resume(one, r1)) + calls.drive_sync(redis, _resume(two, r2)) >= 1
    assert _values(redis, ks) == [b"a", b"retry-a"]
    # Later batches get later sequence numbers and are appended too.
    _schedule_due(redis, ks, topic, b"c")
    assert calls.drive_sync(redis, retries.move_due(ks, topic, 0)) == 1
    assert _values(redis, ks)[-1] == b"retry-c"


def _resume(steps: calls.Steps[int], replies: list[Any]) -> calls.Steps[int]:
    """A procedure whose first round trip already ran: continues from its replies."""
    try:
        batch = steps.send(replies)
    except StopIteration as done:
        return done.value
    while True:
        replies = yield batch
        try:
            batch = steps.send(replies)
        except StopIteration as done:
            return done.value


def test_dead_letter_adds_and_acks_in_one_step(redis: Any, ks: Keyspace, topic: Topic) -> None:
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    (entry_id,) = append(redis, ks, topic, b"x")
    deliver(redis, ks, topic)
    letter = DeadLetter("jobs", 0, 42, GROUP, 3, 1, 10, 20, "ValueError", "bad", 7, b"k", b"x", [("h", None)])
    letter_id = run(redis, dead_letters.add(ks, GROUP, entry_id, letter))
    assert letter_id and run(redis, queue.pending(ks, "jobs", 0, GROUP)) == []
    assert run(redis, dead_letters.add(ks, GROUP, entry_id, letter)) is None
    (stored,) = run(redis, dead_letters.read(ks, "jobs", 0))
    assert stored.error_type == "ValueError" and stored.headers == [("h", None)] and stored.attempts == 3
    assert stored.origin_offset == 42 and stored.letter_id == f"0:{letter_id.decode()}"
    record = Record(7, b"k", b"x")
    assert run(redis, dead_letters.replay_to_origin(ks, stored, record))
    assert not run(redis, dead_letters.replay_to_origin(ks, stored, record))
    assert run(redis, dead_letters.count(ks, "jobs", 0)) == 0
    assert [rid for rid, _ in run(redis, retries.scheduled(ks, "jobs", 0))] == [
        f"{GROUP}/replay-{stored.entry_id}"
    ]


def test_trim_never_passes_what_a_group_still_needs(redis: Any, ks: Keyspace, topic: Topic) -> None:
    ids = append(redis, ks, topic, *[b"%d" % i for i in range(10)])
    run(redis, queue.create_group(ks, topic, 0, "slow", queue.EARLIEST))
    run(redis, queue.create_group(ks, topic, 0, "fast", queue.EARLIEST))
    run(redis, leases.acquire(ks, "jobs", 0, "slow", "m", 10_000))
    run(redis, leases.acquire(ks, "jobs", 0, "fast", "m", 10_000))
    slow = run(redis, queue.read(ks, topic, 0, "slow", "m", 6)).entries  # 6 delivered,
    run(
        redis, queue.ack(ks, "jobs", 0, "slow", [d.entry_id for d in slow[:3]] + [slow[4].entry_id])
    )  # 3 pending
    fast = run(redis, queue.read(ks, topic, 0, "fast", "m", 8)).entries
    run(redis, queue.ack(ks, "jobs", 0, "fast", [d.entry_id for d in fast]))
    removed, bound = run(redis, queue_admin.trim(ks, topic, 0, 2**60))
    assert removed == 3  # entries 0-2: slow's oldest pending is entry 3
    assert redis.execute_command("XRANGE", ks.stream("jobs", 0), "-", "+")[0][0] == ids[3]
    run(redis, queue.ack(ks, "jobs", 0, "slow", [slow[3].entry_id, slow[5].entry_id]))
    removed, _ = run(redis, queue_admin.trim(ks, topic, 0, 2**60))
    assert removed == 3  # now up to slow's last delivered (entry 5)
    assert redis.execute_command("XRANGE", ks.stream("jobs", 0), "-", "+")[0][0] == ids[6]
    requested = queue_admin.trim(ks, topic, 0, 0)
    assert run(redis, requested)[0] == 0  # a lower request wins
    assert redis.hget(ks.partition_state("jobs", 0), "valid_from") == ids[6]


@pytest.mark.both_encodings
def test_lag_counts_and_ages(redis: Any, ks: Keyspace, topic: Topic) -> None:
    run(redis, queue.create_group(ks, topic, 0, GROUP, queue.EARLIEST))
    ids = append(redis, ks, topic, b"0")
    time.sleep(0.01)
    ids += append(redis, ks, topic, *[b"%d" % i for i in range(1, 5)])
    stamps = [int(f[1]) for _, f in redis.execute_command("XRANGE", ks.stream("jobs", 0), "-", "+")]
    # The oldest unconsumed entry's append time: its ID's ms, or on a dense topic its timestamp.
    when = [int(i.split(b"-")[0]) for i in ids] if not topic.offsets.dense else stamps
    assert when[1] > when[0] > 0
    lag = run(redis, queue_admin.lag(ks, "jobs", 0, GROUP))
    assert (lag.undelivered, lag.pending, lag.exact) == (5, 0, True)
    assert lag.oldest_unconsumed_ms == when[0]
    got = run(redis, leases.acquire(ks, "jobs", 0, GROUP, "m", 10_000)) and run(
        redis, queue.read(ks, topic, 0, GROUP, "m", 2)
    )
    run(redis, queue.ack(ks, "jobs", 0, GROUP, [got.entries[0].entry_id]))
    lag = run(redis, queue_admin.lag(ks, "jobs", 0, GROUP))
    assert (lag.undelivered, lag.pending, lag.messages) == (3, 1, 4)
    assert lag.oldest_unconsumed_ms == when[1]  # the pending one
    # After an XDEL Redis no longer knows the lag: it is counted, up to the limit.
    redis.execute_command("XDEL", ks.stream("jobs", 0), ids[4])
    counted = run(redis, queue_admin.lag(ks, "jobs", 0, GROUP))
    assert (counted.undelivered, counted.exact) == (2, True)
    capped = run(redis, queue_admin.lag(ks, "jobs", 0, GROUP, 1))
    assert (capped.undelivered, capped.exact) == (1, False)
    assert run(redis, queue_admin.lag(ks, "jobs", 0, "nobody")) is None


def test_scripts_are_loaded_again_after_a_script_flush(redis: Any, ks: Keyspace) -> None:
    redis.script_flush()
    got = calls.run_many_sync(
        redis,
        [leases.acquire(ks, "jobs", 0, GROUP, "a", 1000), leases.heartbeat(ks, "jobs", GROUP, "a", 1000)],
    )
    assert got == [True, ["a"]]


def test_async_runner_keeps_the_order_of_a_batch_that_loads_scripts(redis_server: Any, ks: Keyspace) -> None:
    async def body() -> list[Any]:
        r = client.connect(redis_server.url)
        try:
            await r.script_flush()
            # A fresh client loads the scripts in the batch's own round trip, ahead of the calls.
            first = await calls.run_many(
                r, [leases.acquire(ks, "jobs", 0, GROUP, "a", 1000), leases.holder(ks, "jobs", 0, GROUP)]
            )
            await r.script_flush()
            again = await calls.run_many(r, [leases.renew(ks, "jobs", 0, GROUP, "a", 1000)])
            return [*first, *again]
        finally:
            await r.aclose()

    assert asyncio.run(body()) == [True, "a", True]
