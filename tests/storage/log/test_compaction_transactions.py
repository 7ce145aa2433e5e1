"""The compactor on transactional partitions: the entries, open-transaction hash and aborted index are
written here with redis-py as docs/key-layout.md describes them, so these tests need no transaction code."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.log import compaction
from schooner.storage.redis import calls
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic

pytestmark = pytest.mark.both_encodings
DEFAULTS: dict[str, str] = {}
OLD = 1_700_000_000_000  # record timestamps far in the past


@pytest.fixture(autouse=True)
def _encoding(topic_defaults: dict[str, str]) -> Iterator[None]:
    DEFAULTS.update(topic_defaults)
    yield
    DEFAULTS.clear()


class Log:
    """Writes a partition's entries at chosen positions: entry n is at offset base + n."""

    def __init__(self, redis: Any, ks: Keyspace, topic: Topic) -> None:
        self.redis, self.ks, self.topic = redis, ks, topic
        self.stream = ks.stream(topic.name, 0)
        # Dense offsets start at 0; timestamp ones are (ms << bits) | seq, so start at an old ms.
        self.base = 0 if topic.offsets.dense else topic.offsets.offset_of(OLD, 0)

    def id(self, n: int) -> str:
        return self.topic.offsets.id_text(self.base + n).decode()

    async def record(self, n: int, key: bytes, value: bytes | None, txn: str | None = None) -> None:
        fields: dict[str, Any] = {"timestamp": OLD, "key": key}
        if value is not None:
            fields["value"] = value
        if txn is not None:
            fields["txn"] = txn
        await self.redis.xadd(self.stream, fields, id=self.id(n))

    async def marker(self, n: int, control: str, txn: str) -> None:
        await self.redis.xadd(self.stream, {"timestamp": OLD, "control": control, "txn": txn}, id=self.id(n))

    async def open(self, pid: int, first: int) -> None:
        await self.redis.hset(self.ks.txn_open(self.topic.name, 0), str(pid), f"0,{self.id(first)},tx-{pid}")

    async def close(self, pid: int) -> None:
        await self.redis.hdel(self.ks.txn_open(self.topic.name, 0), str(pid))

    async def abort(self, pid: int, first: int, marker: int) -> None:
        """The marker entry and its aborted-index member, as the abort writes them."""
        await self.marker(marker, "abort", f"{pid}:0")
        member = f"{pid},{self.id(first)},{self.id(marker)}"
        await self.redis.zadd(self.ks.aborted(self.topic.name, 0), {member: self.base + marker})
        await self.close(pid)

    async def left(self) -> list[int]:
        """The positions of the entries left."""
        entries = await self.redis.xrange(self.stream)
        return [self.topic.offsets.offset_of_id(entry_id) - self.base for entry_id, _ in entries]


async def _topic(redis: Any, ks: Keyspace, **overrides: str) -> Topic:
    configs = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0", **overrides}
    return await calls.drive(redis, metadata.create(ks, "tx", 1, configs, DEFAULTS))


async def _reloaded(redis: Any, ks: Keyspace, **changes: str) -> Topic:
    await calls.run(redis, metadata.update(ks, "tx", set_configs=changes))
    t = await calls.run(redis, metadata.load(ks, "tx", DEFAULTS))
    assert t is not None
    return t


async def _compact(redis: Any, ks: Keyspace, t: Topic, limit: int = 3) -> int:
    assert await calls.run(redis, compaction.claim(ks, t, 0, "me"))
    removed = 0
    while True:
        step = await calls.run(redis, compaction.step(ks, t, 0, "me", limit))
        assert not step.lost_claim
        removed += step.removed
        if not step.more:
            break
    assert await calls.run(redis, compaction.release(ks, t, 0, "me"))
    return removed


def test_aborted_records_go_committed_ones_are_compacted_and_markers_expire(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        log = Log(redis, ks, t)
        await log.record(1, b"a", b"plain")
        await log.open(7, 2)
        await log.record(2, b"a", b"committed", "7:0")
        await log.record(3, b"b", b"committed", "7:0")
        await log.open(8, 4)
        await log.record(4, b"a", b"aborted", "8:0")  # must not knock out a's committed record
        await log.record(5, b"c", None, "8:0")  # an aborted tombstone
        await log.marker(6, "commit", "7:0")
        await log.close(7)
        await log.abort(8, 4, 7)
        await log.open(9, 8)
        await log.record(8, b"b", b"open", "9:0")  # the last stable offset
        await log.record(9, b"a", b"after", None)
        assert await _compact(redis, ks, t) == 3  # a's plain record, and both aborted records
        assert await log.left() == [2, 3, 6, 7, 8, 9]
        state = ks.partition_state("tx", 0)
        assert await redis.hget(state, "clean_to") == log.id(7).encode()  # not a step past the LSO
        assert await redis.zcard(ks.aborted("tx", 0)) == 1  # its marker is still there

        await log.marker(10, "commit", "9:0")
        await log.close(9)
        assert await _compact(redis, ks, t) == 2  # b's and a's records of transaction 7
        assert await log.left() == [6, 7, 8, 9, 10]

        t = await _reloaded(redis, ks, **{"delete.retention.ms": "0"})
        assert await _compact(redis, ks, t) == 3  # the three markers, reached long enough ago
        assert await log.left() == [8, 9]
        assert not await redis.exists(ks.aborted("tx", 0))
        assert not await redis.exists(ks.compaction_aborts("tx", 0))

    run(body)


def test_the_compactor_never_passes_the_last_stable_offset(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"delete.retention.ms": "0"})
        log = Log(redis, ks, t)
        await log.record(1, b"k", b"1")
        await log.open(3, 2)
        await log.record(2, b"k", b"2", "3:0")
        for n in range(3, 40):
            await log.record(n, b"k", b"%d" % n)  # plain records after the open transaction's first
        for _ in range(3):
            assert await _compact(redis, ks, t, limit=5) == 0
        assert await log.left() == list(range(1, 40))
        await log.marker(40, "commit", "3:0")
        await log.close(3)
        assert await _compact(redis, ks, t, limit=5) == 39  # the records before 39, then the marker
        assert await log.left() == [39]

    run(body)


def test_many_aborted_transactions_are_read_a_page_at_a_time(run) -> None:
    """More aborted transactions than one step reads from the index, inside a long one that aborts last:
    the long one's first record is judged only once the index has been read past its marker."""

    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        log = Log(redis, ks, t)
        await log.open(1, 1)
        await log.record(1, b"long", b"aborted", "1:0")
        n = 2
        for pid in range(1000, 1250):
            await log.open(pid, n)
            await log.record(n, b"k", b"aborted", f"{pid}:0")
            await log.abort(pid, n, n + 1)
            n += 2
        await log.abort(1, 1, n)
        await log.record(n + 1, b"j", b"kept")
        assert await _compact(redis, ks, t, limit=200) == 251
        assert await log.left() == [*range(3, n, 2), n, n + 1]  # the markers, and j
        assert await redis.zcard(ks.aborted("tx", 0)) == 251  # until their markers expire
        assert not await redis.exists(ks.compaction_aborts("tx", 0))  # all passed

    run(body)


def test_a_producer_whose_transactions_alternate(run) -> None:
    """One producer: committed, aborted, committed again; each record is judged by its own transaction."""

    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        log = Log(redis, ks, t)
        await log.open(5, 1)
        await log.record(1, b"x", b"1", "5:0")
        await log.marker(2, "commit", "5:0")
        await log.close(5)
        await log.open(5, 3)
        await log.record(3, b"y", b"2", "5:0")
        await log.record(4, b"x", b"2", "5:0")
        await log.abort(5, 3, 5)
        await log.open(5, 6)
        await log.record(6, b"y", b"3", "5:0")
        await log.marker(7, "commit", "5:0")
        await log.close(5)
        assert await _compact(redis, ks, t, limit=2) == 2
        assert await log.left() == [1, 2, 5, 6, 7]
        t = await _reloaded(redis, ks, **{"delete.retention.ms": "0"})
        assert await _compact(redis, ks, t) == 3
        assert await log.left() == [1, 6]
        assert not await redis.exists(ks.aborted("tx", 0))

    run(body)
