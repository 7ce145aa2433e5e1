"""The compactor's steps (scripts/log_compact.lua) and its claim, against a real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import compaction
from schooner.storage.log import read as log_read
from schooner.storage.log.append import APPENDED, RecordBatch
from schooner.storage.redis import calls
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic

pytestmark = pytest.mark.both_encodings
DEFAULTS: dict[str, str] = {}
OLD = 1_700_000_000_000  # a record timestamp far in the past


class R:
    def __init__(self, key: bytes | None, value: bytes | None, timestamp: int = OLD) -> None:
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers: list[tuple[str, bytes | None]] = []


@pytest.fixture(autouse=True)
def _encoding(topic_defaults: dict[str, str]) -> Iterator[None]:
    DEFAULTS.update(topic_defaults)
    yield
    DEFAULTS.clear()


async def _topic(redis: Any, ks: Keyspace, **overrides: str) -> Topic:
    """A compacted topic; a dirty ratio of 0 unless given: any record not yet compacted starts a pass."""
    configs = {"cleanup.policy": "compact", "retention.ms": "-1", "min.cleanable.dirty.ratio": "0"}
    configs.update(overrides)
    return await calls.drive(redis, metadata.create(ks, "c", 1, configs, DEFAULTS))


async def _append(redis: Any, ks: Keyspace, t: Topic, records: list[R]) -> int:
    result = await calls.run(redis, log_append.append(ks, t, 0, RecordBatch(records)))
    assert result.status == APPENDED
    return result.base_offset


async def _compact(redis: Any, ks: Keyspace, t: Topic, limit: int = 3) -> int:
    """Claims, steps until there is nothing more to do now, releases; returns the entries removed."""
    assert await calls.run(redis, compaction.claim(ks, t, 0, "me"))
    removed = 0
    while True:
        step = await calls.run(redis, compaction.step(ks, t, 0, "me", limit))
        assert not step.lost_claim and step.scanned <= limit
        removed += step.removed
        if not step.more:
            break
    assert await calls.run(redis, compaction.release(ks, t, 0, "me"))
    return removed


async def _log(redis: Any, ks: Keyspace, t: Topic) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every entry left."""
    read = await calls.drive(redis, log_read.read(ks, t, 0, 0, 10_000))
    out = []
    for entry_id, raw in read.entries:
        fields = dict(zip(raw[::2], raw[1::2], strict=True))
        out.append((t.offsets.offset_of_id(entry_id), fields.get(b"key"), fields.get(b"value")))
    return out


def test_latest_value_per_key_survives_with_its_offset(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        base = await _append(redis, ks, t, [R(b"a", b"1"), R(b"b", b"1"), R(b"a", b"2")])
        second = await _append(redis, ks, t, [R(b"c", b"1"), R(b"b", b"2"), R(b"a", b"3"), R(b"c", b"")])
        before = await calls.drive(redis, log_read.bounds(ks, t, 0))
        assert await _compact(redis, ks, t, limit=2) == 4
        assert await _log(redis, ks, t) == [
            (second + 1, b"b", b"2"),
            (second + 2, b"a", b"3"),
            (second + 3, b"c", b""),  # an empty value is a value, not a tombstone
        ]
        after = await calls.drive(redis, log_read.bounds(ks, t, 0))
        assert after.high_watermark == before.high_watermark  # offsets keep their values
        assert after.first_valid_offset <= base  # a consumer at an offset in the gap reads on
        assert await _compact(redis, ks, t) == 0  # nothing new: nothing more to remove
        later = await _append(redis, ks, t, [R(b"b", b"3")])
        assert await _compact(redis, ks, t) == 1
        assert [o for o, _, _ in await _log(redis, ks, t)] == [second + 2, second + 3, later]

    run(body)


def test_tombstones_disappear_after_delete_retention(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"delete.retention.ms": "500"})
        base = await _append(redis, ks, t, [R(b"a", b"1"), R(b"b", b"1"), R(b"a", None)])
        assert await _compact(redis, ks, t) == 1  # a's value goes, its tombstone stays for now
        assert await _log(redis, ks, t) == [(base + 1, b"b", b"1"), (base + 2, b"a", None)]
        await asyncio.sleep(0.2)
        assert await _compact(redis, ks, t) == 0
        await asyncio.sleep(0.4)
        assert await _compact(redis, ks, t) == 1
        assert await _log(redis, ks, t) == [(base + 1, b"b", b"1")]
        assert not await redis.hexists(ks.compaction_keys("c", 0), b"a")
        assert not await redis.exists(ks.tombstones("c", 0))
        again = await _append(redis, ks, t, [R(b"a", b"new")])  # the key starts afresh
        assert await _compact(redis, ks, t) == 0
        assert (again, b"a", b"new") in await _log(redis, ks, t)

    run(body)


def test_min_compaction_lag_keeps_the_head(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"min.compaction.lag.ms": "3600000"})
        now = int(time.time() * 1000)
        young = now - 60_000
        base = await _append(redis, ks, t, [R(b"k", b"1"), R(b"k", b"2"), R(b"k", b"3", young)])
        second = await _append(redis, ks, t, [R(b"k", b"4"), R(b"j", b"1", young)])
        # Only k=1 goes: k=2's successor is younger than the lag, and the scan stops there.
        assert await _compact(redis, ks, t) == 1
        assert [o for o, _, _ in await _log(redis, ks, t)] == [base + 1, base + 2, second, second + 1]
        t0 = await _topic_reloaded(redis, ks, **{"min.compaction.lag.ms": "0"})
        assert await _compact(redis, ks, t0) == 2
        assert await _log(redis, ks, t0) == [(second, b"k", b"4"), (second + 1, b"j", b"1")]

    run(body)


async def _topic_reloaded(redis: Any, ks: Keyspace, **changes: str) -> Topic:
    await calls.run(redis, metadata.update(ks, "c", set_configs=changes))
    t = await calls.run(redis, metadata.load(ks, "c", DEFAULTS))
    assert t is not None
    return t


def test_one_compactor_per_partition(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        await _append(redis, ks, t, [R(b"a", b"1"), R(b"a", b"2")])
        assert await calls.run(redis, compaction.claim(ks, t, 0, "one"))
        assert not await calls.run(redis, compaction.claim(ks, t, 0, "two"))
        refused = await calls.run(redis, compaction.step(ks, t, 0, "two"))
        assert refused.lost_claim and refused.removed == 0
        assert not await calls.run(redis, compaction.release(ks, t, 0, "two"))
        assert (await calls.run(redis, compaction.step(ks, t, 0, "one"))).removed == 1
        assert await calls.run(redis, compaction.release(ks, t, 0, "one"))
        assert await calls.run(redis, compaction.claim(ks, t, 0, "two", ttl_ms=100))
        await asyncio.sleep(0.25)  # a compactor that died: its claim lapses
        assert await calls.run(redis, compaction.claim(ks, t, 0, "three"))

    run(body)


def test_appends_during_compaction_lose_nothing(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        written: dict[bytes, tuple[int, bytes]] = {}
        done = asyncio.Event()

        async def produce() -> None:
            for i in range(200):
                records = [R(b"k%d" % (j % 37), b"%d-%d" % (i, j)) for j in range(i % 5 + 1)]
                base = await _append(redis, ks, t, records)
                for n, r in enumerate(records):
                    assert r.key is not None and r.value is not None
                    written[r.key] = (base + n, r.value)
            done.set()

        async def compact() -> int:
            removed = 0
            while not done.is_set():
                removed += await _compact(redis, ks, t, limit=7)
                await asyncio.sleep(0)
            return removed

        _, removed = await asyncio.gather(produce(), compact())
        removed += await _compact(redis, ks, t, limit=7)
        assert removed > 0
        left = await _log(redis, ks, t)
        assert {k: (o, v) for o, k, v in left} == written  # the latest record of every key, and only it
        assert len(left) == len(written)

    run(body)


def test_compact_only_topic_has_no_retention(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"retention.ms": "1", "retention.bytes": "1"})
        assert (t.retention_ms, t.retention_bytes, t.compacted) == (-1, -1, True)
        both = await _topic_reloaded(redis, ks, **{"cleanup.policy": "compact,delete"})
        assert (both.retention_ms, both.retention_bytes, both.compacted) == (1, 1, True)

    run(body)


async def _one_step(redis: Any, ks: Keyspace, t: Topic) -> compaction.CompactionStep:
    assert await calls.run(redis, compaction.claim(ks, t, 0, "me"))
    try:
        return await calls.run(redis, compaction.step(ks, t, 0, "me", 100))
    finally:
        await calls.run(redis, compaction.release(ks, t, 0, "me"))


def test_a_pass_begins_only_above_the_dirty_ratio(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"min.cleanable.dirty.ratio": "0.5"})
        await _append(redis, ks, t, [R(b"k%d" % i, b"1") for i in range(20)])
        assert await _compact(redis, ks, t, limit=3) == 0  # all dirty: a pass ran and found nothing to remove
        await _append(redis, ks, t, [R(b"k%d" % i, b"2") for i in range(20)])
        # 20 dirty of 40 is not more than half: nothing happens, however often the compactor comes.
        for _ in range(3):
            step = await _one_step(redis, ks, t)
            assert (step.scanned, step.removed, step.more, step.dirty, step.total) == (0, 0, False, 20, 40)
        await _append(redis, ks, t, [R(b"k0", b"3")])
        # 21 of 41: a pass begins, and runs to its end over several steps although the ratio falls.
        assert await _compact(redis, ks, t, limit=3) == 21
        assert len(await _log(redis, ks, t)) == 20
        assert (await _one_step(redis, ks, t)).dirty == 0

    run(body)


def test_the_dirty_ratio_counts_what_retention_trimmed(run) -> None:
    """Retention (here a plain XTRIM) removes the oldest entries, the compacted ones first: the ratio
    must count only the compacted entries that are left."""

    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"min.cleanable.dirty.ratio": "0.5"})
        await _append(redis, ks, t, [R(b"k%d" % i, b"1") for i in range(20)])
        await _compact(redis, ks, t)
        entries = await redis.xrange(ks.stream("c", 0))
        # 5 compacted entries are left
        await redis.xtrim(ks.stream("c", 0), minid=entries[15][0], approximate=False)
        await _append(redis, ks, t, [R(b"k%d" % i, b"2") for i in range(15, 20)])
        step = await _one_step(redis, ks, t)
        assert (step.dirty, step.total, step.scanned) == (5, 10, 0)  # half: not more than the ratio
        await _append(redis, ks, t, [R(b"k0", b"2")])
        step = await _one_step(redis, ks, t)
        assert (step.dirty, step.total, step.scanned, step.removed) == (6, 11, 6, 5)
        assert [k for _, k, _ in await _log(redis, ks, t)] == [b"k%d" % i for i in (15, 16, 17, 18, 19, 0)]

    run(body)


def test_max_lag_compacts_below_the_dirty_ratio(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        lags = {"min.cleanable.dirty.ratio": "0.9", "max.compaction.lag.ms": "3600000"}
        t = await _topic(redis, ks, **lags)
        await _append(redis, ks, t, [R(b"k%d" % i, b"1") for i in range(20)])
        await _compact(redis, ks, t)
        now = int(time.time() * 1000)
        await _append(redis, ks, t, [R(b"k0", b"2", now - 60_000), R(b"k1", b"2", now - 60_000)])
        assert await _compact(redis, ks, t) == 0  # 2 dirty of 22, and a minute is within the max lag
        t = await _topic_reloaded(redis, ks, **{"max.compaction.lag.ms": "30000"})
        assert await _compact(redis, ks, t) == 2  # the first dirty record is past the max lag now
        assert [k for _, k, _ in await _log(redis, ks, t)][-2:] == [b"k0", b"k1"]

    run(body)


def test_a_fresh_record_stays_until_it_is_older_than_the_min_lag(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"min.compaction.lag.ms": "1000"})
        first = await _append(redis, ks, t, [R(b"k", b"1", int(time.time() * 1000))])
        second = await _append(redis, ks, t, [R(b"k", b"2", int(time.time() * 1000))])
        assert await _compact(redis, ks, t) == 0
        assert [o for o, _, _ in await _log(redis, ks, t)] == [first, second]
        await asyncio.sleep(1.1)
        assert await _compact(redis, ks, t) == 1
        assert await _log(redis, ks, t) == [(second, b"k", b"2")]

    run(body)
