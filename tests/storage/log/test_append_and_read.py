"""The append script and the log reads, against a real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.log import append as log_append
from schooner.storage.log import entry, lookup, retention
from schooner.storage.log import read as log_read
from schooner.storage.log.append import APPENDED, DUPLICATE, UNKNOWN_PARTITION, AppendResult, RecordBatch
from schooner.storage.offsets import timestamp_offsets
from schooner.storage.redis import calls, client
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic


def now_ms() -> int:
    return int(time.time() * 1000)


class R:
    def __init__(self, value: bytes, timestamp: int = 1_700_000_000_000, key: bytes | None = None) -> None:
        self.value = value
        self.key = key
        self.timestamp = timestamp
        self.headers: list[tuple[str, bytes | None]] = []


pytestmark = pytest.mark.both_encodings
DEFAULTS: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _encoding(topic_defaults: dict[str, str]) -> Iterator[None]:
    DEFAULTS.update(topic_defaults)
    yield
    DEFAULTS.clear()


async def _topic(redis: Any, ks: Keyspace, name: str = "t", **overrides: str) -> Topic:
    # No time retention unless asked: these records carry made-up timestamps, which a dense topic's
    # retention (by record time, as Kafka's) would trim at once.
    return await calls.drive(
        redis, metadata.create(ks, name, 1, {"retention.ms": "-1", **overrides}, DEFAULTS)
    )


async def _append(
    redis: Any, ks: Keyspace, t: Topic, partition: int, records: list[Any], **batch: int
) -> AppendResult:
    return await calls.run(redis, log_append.append(ks, t, partition, RecordBatch(records, **batch)))


def test_batch_gets_contiguous_offsets_and_carries_past_the_sequence_bits(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(
            redis, ks, **{"schooner.offset.encoding": "timestamp", "schooner.sequence.bits": "2"}
        )
        result = await _append(redis, ks, t, 0, [R(b"%d" % i) for i in range(10)])
        assert result.status == APPENDED
        assert result.last_offset == result.base_offset + 9
        read = await calls.drive(redis, log_read.read(ks, t, 0, result.base_offset, 100))
        ids = [e[0] for e in read.entries]
        offsets = [(int(i.split(b"-")[0]) << 2) | int(i.split(b"-")[1]) for i in ids]
        assert offsets == list(range(result.base_offset, result.base_offset + 10))
        assert {timestamp_offsets(2).id_of(o)[1] for o in offsets} <= {0, 1, 2, 3}
        assert read.high_watermark == result.last_offset + 1
        assert read.log_start_offset == result.base_offset

    run(body)


def test_offsets_only_grow_across_appends(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        last = -1
        for _ in range(50):
            r = await _append(redis, ks, t, 0, [R(b"x"), R(b"y")])
            assert r.base_offset > last
            last = r.last_offset

    run(body)


def test_idempotent_producer_state(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)

        async def send(epoch: int, seq: int, n: int = 2) -> AppendResult:
            return await _append(
                redis, ks, t, 0, [R(b"v")] * n, producer_id=7, producer_epoch=epoch, base_sequence=seq
            )

        first = await send(0, 0)
        assert first.status == APPENDED
        again = await send(0, 0)
        assert again.status == DUPLICATE and again.base_offset == first.base_offset
        assert (await send(0, 5)).status == -45  # a gap: OUT_OF_ORDER_SEQUENCE_NUMBER
        second = await send(0, 2)
        assert second.status == APPENDED
        for seq in (4, 6, 8, 10, 12):
            assert (await send(0, seq)).status == APPENDED
        assert (await send(0, 0)).status == -45  # older than the last five batches
        assert (await send(0, 12)).status == DUPLICATE
        assert (await send(1, 3)).status == -45  # a new epoch must start at sequence 0
        assert (await send(1, 0)).status == APPENDED
        assert (await send(0, 14)).status == -47  # fenced: INVALID_PRODUCER_EPOCH
        fresh = await _append(redis, ks, t, 0, [R(b"v")], producer_id=8, producer_epoch=0, base_sequence=42)
        assert fresh.status == APPENDED  # no state for this producer yet: any sequence

    run(body)


def test_append_to_a_deleted_or_recreated_topic_is_refused(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        await calls.drive(redis, metadata.delete(ks, "t"))
        assert (await _append(redis, ks, t, 0, [R(b"late")])).status == UNKNOWN_PARTITION
        again = await _topic(redis, ks)
        assert (await _append(redis, ks, t, 0, [R(b"stale id")])).status == UNKNOWN_PARTITION
        assert (await _append(redis, ks, again, 0, [R(b"ok")])).status == APPENDED

    run(body)


def test_retention_ms_is_applied_by_the_retention_pass_never_by_an_append(run) -> None:
    """As Kafka: records stamped long before retention.ms (a backfill) are kept by their append, read and
    found by time, until the retention pass (log_retention.lua); it also trims partitions left idle."""

    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"retention.ms": "500"})
        old = await _append(redis, ks, t, 0, [R(b"1970", 1_000), R(b"1970", 2_000)])
        assert old.log_start_offset == old.base_offset
        read = await calls.drive(redis, log_read.read(ks, t, 0, old.base_offset, 10))
        assert [e[1][-1] for e in read.entries] == [b"1970", b"1970"]
        found = await calls.drive(redis, lookup.offset_for_timestamp(ks, t, 0, 1_500))
        assert found == (old.last_offset, 2_000)
        await asyncio.sleep(0.55)  # past retention.ms by append time too (timestamp-encoded topics)
        fresh = await _append(redis, ks, t, 0, [R(b"fresh", now_ms())])
        assert fresh.log_start_offset == old.base_offset  # no append trims by time
        assert await calls.run(redis, retention.apply_retention(ks, t, 0)) == 2
        read = await calls.drive(redis, log_read.read(ks, t, 0, 0, 10))
        assert [e[1][-1] for e in read.entries] == [b"fresh"]
        assert read.log_start_offset == fresh.base_offset
        await asyncio.sleep(0.55)
        assert await calls.run(redis, retention.apply_retention(ks, t, 0)) == 1  # an idle partition
        bounds = await calls.drive(redis, log_read.bounds(ks, t, 0))
        assert bounds.log_start_offset == bounds.high_watermark  # empty, but the watermark stays

    run(body)


def test_retention_bytes_keeps_about_that_many_bytes(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"retention.bytes": "1000"})
        for _ in range(20):
            await _append(redis, ks, t, 0, [R(b"x" * 90)], size_bytes=100)
        assert await redis.xlen(ks.stream("t", 0)) == 10

    run(body)


def test_retention_bytes_on_append_keeps_the_batch_just_appended(run) -> None:
    """An append trims by retention.bytes (Redis memory is what it bounds), but never the batch it
    appends, as Kafka never deletes its active segment; the retention pass then trims to the bound."""

    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"retention.bytes": "1000"})
        r = await _append(redis, ks, t, 0, [R(b"x" * 90)] * 20, size_bytes=2000)
        assert await redis.xlen(ks.stream("t", 0)) == 20 and r.log_start_offset == r.base_offset
        assert await calls.run(redis, retention.apply_retention(ks, t, 0)) == 10

    run(body)


def test_timestamp_lookup_with_out_of_order_create_times(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        offsets = []
        for ts in (5000, 1000, 9000, 2000, 12000):
            offsets.append((await _append(redis, ks, t, 0, [R(b"v", ts)])).base_offset)
        for target, index in [(0, 0), (5000, 0), (5001, 2), (9001, 4)]:
            assert await calls.drive(redis, lookup.offset_for_timestamp(ks, t, 0, target)) == (
                offsets[index],
                [5000, 1000, 9000, 2000, 12000][index],
            )
        assert await calls.drive(redis, lookup.offset_for_timestamp(ks, t, 0, 12001)) is None
        assert await calls.drive(redis, lookup.max_timestamp(ks, t, 0)) == (offsets[4], 12000)

    run(body)


def test_log_append_time_stamps_records_with_the_append_time(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"message.timestamp.type": "LogAppendTime"})
        before = int(time.time() * 1000)
        r = await _append(redis, ks, t, 0, [R(b"v", 1)])
        assert r.append_time >= before - 1000
        found = await calls.drive(redis, lookup.offset_for_timestamp(ks, t, 0, before - 1000))
        assert found == (r.base_offset, r.append_time)

    run(body)


def test_delete_records_moves_the_log_start(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        r = await _append(redis, ks, t, 0, [R(b"%d" % i) for i in range(10)])
        start = await calls.run(redis, retention.delete_records(ks, t, 0, r.base_offset + 4))
        assert start == r.base_offset + 4
        read = await calls.drive(redis, log_read.read(ks, t, 0, start, 100))
        assert len(read.entries) == 6 and read.first_valid_offset == start

    run(body)


def test_an_offset_in_the_gap_after_removed_records_stays_valid(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        # Batches leave gaps between their offsets only in the timestamp encoding.
        t = await _topic(redis, ks, **{"schooner.offset.encoding": "timestamp"})
        first = await _append(redis, ks, t, 0, [R(b"a")])
        await asyncio.sleep(0.01)
        second = await _append(redis, ks, t, 0, [R(b"b")])
        position = first.last_offset + 1  # where a consumer of "a" resumes
        assert position < second.base_offset
        await calls.run(redis, retention.delete_records(ks, t, 0, position))
        read = await calls.drive(redis, log_read.read(ks, t, 0, position, 10))
        assert read.first_valid_offset <= position < read.log_start_offset == second.base_offset
        assert [e[1][-1] for e in read.entries] == [b"b"]

    run(body)


def test_the_blocking_runner_runs_the_same_round_trips(redis_server, keyspace) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    t = drive_sync(redis, metadata.create(ks, "blocking", 1, {"retention.ms": "-1"}, DEFAULTS))
    result = run_sync(redis, log_append.append(ks, t, 0, RecordBatch([R(b"a"), R(b"b", key=b"k")])))
    assert result.status == APPENDED and result.last_offset == result.base_offset + 1
    read = drive_sync(redis, log_read.read(ks, t, 0, result.base_offset, 10))
    assert [e[1][-1] for e in read.entries] == [b"a", b"b"]
    assert read.high_watermark == result.last_offset + 1
    assert drive_sync(redis, log_read.bounds(ks, t, 0)).log_start_offset == result.base_offset
    assert run_sync(redis, metadata.load(ks, "blocking", {})) == t
    assert [x.name for x in drive_sync(redis, metadata.load_all(ks, {}))] == ["blocking"]


def test_null_fields_are_left_out_and_empty_ones_kept(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        records = [R(b"", key=b""), R(b"v"), R(b"x", key=b"k")]
        records[1].headers = [("h", None)]
        nulls = R(b"")
        nulls.value = None
        records.append(nulls)
        result = await _append(redis, ks, t, 0, records)
        read = await calls.drive(redis, log_read.read(ks, t, 0, result.base_offset, 10))
        got = [dict(zip(f[::2], f[1::2], strict=True)) for _, f in read.entries]
        assert (got[0][b"key"], got[0][b"value"]) == (b"", b"")
        assert b"key" not in got[1] and entry.decode_headers(got[1][b"headers"]) == [("h", None)]
        assert (got[2][b"key"], got[2][b"value"]) == (b"k", b"x") and b"headers" not in got[2]
        assert set(got[3]) == {b"timestamp"}

    run(body)


def test_dense_offsets_count_records_from_zero(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"schooner.offset.encoding": "dense"})
        results = [await _append(redis, ks, t, 0, [R(b"%d" % i)]) for i in range(5)]
        assert [r.base_offset for r in results] == [0, 1, 2, 3, 4]
        batch = await _append(redis, ks, t, 0, [R(b"x")] * 3)
        assert (batch.base_offset, batch.last_offset) == (5, 7)
        entries = await redis.xrange(ks.stream("t", 0))
        assert [e[0] for e in entries] == [b"0-%d" % n for n in range(1, 9)]  # offset n is ID 0-(n+1)
        # A plain Redis writer appends with 0-*, and the broker's next append follows it.
        assert await redis.xadd(ks.stream("t", 0), {"value": b"native"}, id="0-*") == b"0-9"
        assert (await _append(redis, ks, t, 0, [R(b"after")])).base_offset == 9
        read = await calls.drive(redis, log_read.read(ks, t, 0, 8, 10))
        assert [e[1][-1] for e in read.entries] == [b"native", b"after"]
        assert (read.log_start_offset, read.high_watermark) == (0, 10)

    run(body)


def test_a_star_entry_on_a_dense_topic_stops_appends_but_no_reader_sees_it(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"schooner.offset.encoding": "dense"})
        await _append(redis, ks, t, 0, [R(b"a"), R(b"b")])
        foreign = (await redis.xadd(ks.stream("t", 0), {"value": b"star"})).decode()
        refused = await _append(redis, ks, t, 0, [R(b"c")])
        assert (refused.status, refused.foreign_id) == (log_append.FOREIGN_ID, foreign)
        assert await redis.hget(ks.partition_state("t", 0), "foreign_id") == foreign.encode()
        read = await calls.drive(redis, log_read.read(ks, t, 0, 0, 10))
        assert [e[1][-1] for e in read.entries] == [b"a", b"b"]  # nothing lost, nothing made up
        assert (read.log_start_offset, read.high_watermark) == (0, 2)

    run(body)


def test_dense_time_retention_and_lookups_use_the_time_index(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **{"schooner.offset.encoding": "dense", "retention.ms": "60000"})
        now = now_ms()
        # An old batch (a backfill) is trimmed by its record time, as Kafka trims by the largest timestamp,
        # when the retention pass runs.
        await _append(redis, ks, t, 0, [R(b"old", now - 120_000)])
        kept = await _append(redis, ks, t, 0, [R(b"new", now)])
        assert await calls.run(redis, retention.apply_retention(ks, t, 0)) == 1
        read = await calls.drive(redis, log_read.read(ks, t, 0, 0, 10))
        assert [e[1][-1] for e in read.entries] == [b"new"] and read.log_start_offset == kept.base_offset == 1
        found = await calls.drive(redis, lookup.offset_for_timestamp(ks, t, 0, now - 1))
        assert found == (1, now)
        appended = await _topic(redis, ks, "lat", **{"schooner.offset.encoding": "dense",
                                                     "message.timestamp.type": "LogAppendTime"})  # fmt: skip
        first = await _append(redis, ks, appended, 0, [R(b"x", 5)])
        await asyncio.sleep(0.01)
        second = await _append(redis, ks, appended, 0, [R(b"y", 5)])
        assert await calls.drive(
            redis, lookup.offset_for_timestamp(ks, appended, 0, first.append_time + 1)
        ) == (
            1,
            second.append_time,
        )

    run(body)


def _keyed(value: bytes, ts: int) -> R:
    return R(value, ts, key=b"k" + value)


def _headed(value: bytes, ts: int) -> R:
    r = R(value, ts)
    r.headers = [("h", value)]
    return r


# Batches whose records fall into several runs of one shape and timestamp (see log_append.lua).
RUN_BATCHES = {
    "unkeyed": [R(b"%d" % i, ts) for i, ts in enumerate([5, 5, 5, 3, 3, 9, 9, 9, 9, 4])],
    "keyed": [_keyed(b"%d" % i, ts) for i, ts in enumerate([7, 7, 2, 2, 2, 2, 8, 8, 8, 8, 8])],
    "mixed": [
        R(b"0", 1),
        _keyed(b"1", 1),
        _keyed(b"2", 1),
        _headed(b"3", 1),
        _headed(b"4", 1),
        _headed(b"5", 2),
        R(b"6", 2),
        R(b"7", 2),
        R(b"8", 2),
        R(b"9", 2),
        _keyed(b"10", 2),
    ],  # fmt: skip
}


@pytest.mark.parametrize("kind", sorted(RUN_BATCHES))
@pytest.mark.parametrize("transactional", [False, True])
def test_runs_of_records_are_stored_one_entry_each_in_order(run, kind: str, transactional: bool) -> None:
    # Sequence bits 2 on a timestamp topic: the sequence carries into the next ms inside runs.
    encoding = DEFAULTS["schooner.offset.encoding"]
    small = {"schooner.sequence.bits": "2"} if encoding == "timestamp" else {}
    records = RUN_BATCHES[kind]

    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks, **small)
        await _append(redis, ks, t, 0, [R(b"before", 0)])  # the batch starts mid-millisecond
        txn_id = "tx" if transactional else None
        result = await calls.run(
            redis, log_append.append(ks, t, 0, RecordBatch(records), transactional_id=txn_id)
        )
        assert result.status == APPENDED
        assert result.last_offset == result.base_offset + len(records) - 1
        read = await calls.drive(redis, log_read.read(ks, t, 0, result.base_offset, 100))
        assert len(read.entries) == len(records)
        for r, (_, fields) in zip(records, read.entries, strict=True):
            stored = dict(zip(fields[::2], fields[1::2], strict=True))
            assert int(stored[b"timestamp"]) == r.timestamp
            assert stored[b"value"] == r.value
            assert stored.get(b"key") == r.key
            assert entry.decode_headers(stored.get(b"headers", b"")) == r.headers
            assert (b"txn" in stored) is transactional
        offsets = [t.offsets.offset_of(*(int(x) for x in i.split(b"-"))) for i, _ in read.entries]
        assert offsets == list(range(result.base_offset, result.last_offset + 1))
        # The time index points at the first record with the batch's highest timestamp.
        top = max(r.timestamp for r in records)
        at = [r.timestamp for r in records].index(top)
        state = await redis.hmget(ks.partition_state(t.name, 0), "max_ts", "max_ts_id")
        assert (int(state[0]), state[1]) == (top, read.entries[at][0])

    run(body)


def test_small_batches_share_time_index_members_and_lookups_stay_exact(run) -> None:
    async def body(redis: Any, ks: Keyspace) -> None:
        t = await _topic(redis, ks)
        base = 1_700_000_000_000
        # 600 one-record batches, 1 ms apart, with every third going back in time; then one 2 s later.
        stamps = [base + i - (5 if i % 3 == 2 else 0) for i in range(600)] + [base + 2_600]
        offsets = [
            (await _append(redis, ks, t, 0, [R(b"%d" % i, ts)])).base_offset for i, ts in enumerate(stamps)
        ]
        members = await redis.zrange(ks.time_index("t", 0), 0, -1, withscores=True)
        # A member spans at most 500 records (then a new one starts), and at most 1,000 ms of timestamps.
        assert len(members) == 3
        assert [score for _, score in members] == [base + 499, base + 598, base + 2_600]
        for target in [
            base - 1,
            base,
            base + 1,
            base + 250,
            base + 498,
            base + 499,
            base + 500,
            base + 599,
            base + 1_000,
            base + 2_600,
        ]:
            expected = next(((o, ts) for o, ts in zip(offsets, stamps, strict=True) if ts >= target), None)
            assert await calls.drive(redis, lookup.offset_for_timestamp(ks, t, 0, target)) == expected, target

    run(body)
