"""The tiered log's one model (storage/cold/tiers.py): its rules, then both of its runners, the broker's
(Tiering: ListOffsets and DeleteRecords) and Spark's (TieredLog: planning), fed the same tier marks and
the same table, giving the same answers where a cached view of the table says otherwise."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from schooner.broker.tiering.tiering import Tiering
from schooner.spark.tiers import TieredLog
from schooner.storage.blocking_store import BlockingStore
from schooner.storage.cold import marks as cold_marks
from schooner.storage.cold import tiers
from schooner.storage.cold.aio import AsyncColdStore
from schooner.storage.cold.location import ColdLocation
from schooner.storage.cold.marks import TierMarks
from schooner.storage.cold.table import ColdStore
from schooner.storage.cold.tiers import Tier
from schooner.storage.keys import Keyspace
from schooner.storage.log import retention
from schooner.storage.log.entry import Record
from schooner.storage.redis import client
from schooner.storage.store import Store

BASE = 1_700_000_000_000


def test_route_and_log_start_follow_the_marks() -> None:
    marks = TierMarks(archived_end=60, cold_start=20)
    assert tiers.log_start(marks, 40) == 20
    assert tiers.log_start(TierMarks(None, None), 40) == 40
    assert tiers.log_start(TierMarks(60, 50), 40) == 40  # Redis still holds records below the cold start
    assert tiers.route(19, marks, 40) is Tier.OUT_OF_RANGE
    assert tiers.route(20, marks, 40) is Tier.COLD
    assert tiers.route(39, marks, 40) is Tier.COLD
    assert tiers.route(40, marks, 40) is Tier.HOT
    # Below Redis' start but not archived: a gap no tier holds, Redis answers with its next records.
    assert tiers.route(70, TierMarks(60, 20), 80) is Tier.HOT
    assert tiers.route(5, TierMarks(None, None), 10) is Tier.OUT_OF_RANGE
    assert tiers.cold_span(marks) == (20, 60)
    assert tiers.cold_span(TierMarks(60, None)) is None
    assert tiers.cold_span(TierMarks(20, 20)) is None  # trimmed to its end: nothing cold


def test_timestamp_matches_and_listoffsets_rules() -> None:
    assert tiers.earliest_match((5, 1), (7, 2)) == (5, 1)
    assert tiers.earliest_match(None, (7, 2)) == (7, 2)
    assert tiers.earliest_match((9, 3), (7, 2)) == (7, 2)  # Redis kept records a cold trim removed
    assert tiers.earliest_match(None, None) is None
    assert tiers.needs_hot_lookup(None, 40)
    assert tiers.needs_hot_lookup((50, 0), 40)
    assert not tiers.needs_hot_lookup((30, 0), 40)
    marks = TierMarks(archived_end=60, cold_start=20)
    assert tiers.latest_tiered(marks) == 59
    assert tiers.latest_tiered(TierMarks(None, None)) == -1
    assert tiers.earliest_pending_upload(marks, 40) == 60
    assert tiers.earliest_pending_upload(marks, 70) == 70
    assert tiers.cold_cut(marks, 25) == 25
    assert tiers.cold_cut(marks, 20) is None
    assert tiers.cold_cut(TierMarks(None, None), 25) is None


def _broker_answers(url: str, keyspace: str, cold: ColdStore, topic: Any, stamps: list[int]) -> Any:
    async def main() -> Any:
        store = Store(client.connect(url), Keyspace(keyspace))
        tiering = Tiering(store, AsyncColdStore(cold))
        try:
            redis_start = (await store.bounds(topic, 0)).log_start_offset
            earliest = await tiering.earliest(topic, 0, redis_start)
            found = [await tiering.offset_for_timestamp(topic, 0, t) for t in stamps]
            return earliest, found
        finally:
            await store.redis.aclose()

    return asyncio.run(main())


def _spark_answers(url: str, keyspace: str, cold: ColdStore, topic: Any, stamps: list[int]) -> Any:
    view = TieredLog(BlockingStore.connect(url, keyspace), cold)
    try:
        earliest = view.bounds_of([(topic, 0)])[0].log_start_offset
        return earliest, [view.offset_for_timestamp(topic, 0, t) for t in stamps]
    finally:
        view.store.close()


def test_the_broker_and_spark_answer_alike_from_the_marks(make_log, tmp_path, keyspace, redis_server) -> None:
    """90 records in three seconds' worth of times; 0..59 archived, Redis trimmed below 40, then another
    broker's store trims the table below 20. This store's cached files still hold 0..19: both runners
    must answer by the marks, not by what the cache says."""
    log = make_log("parity", **{"remote.storage.enable": "true"})
    topic = log.topic
    for second in range(3):
        log.append([Record(BASE + 100 * second + i, b"k", b"v%d" % i) for i in range(30)])
    location = ColdLocation.from_url(f"file://{tmp_path}/cold")
    cold = ColdStore(location, keyspace)
    piece = log.slice(0, 60)
    assert cold.archive(topic, 0, piece).end == 60
    log.call(cold_marks.record(log.ks, topic, 0, 60, 0))
    log.call(retention.delete_records(log.ks, topic, 0, 40))
    assert len(cold.read(topic, 0, 0, 1 << 20).entries) == 60  # this store's caches now hold them all

    other = ColdStore(location, keyspace)  # another broker's: its trim, then the marks it moves
    other.trim(topic, 0, 20, vacuum=False)  # the files stay: this store's cached index still reads them
    log.call(cold_marks.record(log.ks, topic, 0, trimmed_below=20))
    assert cold.read(topic, 0, 0, 1 << 20).entries[0][0] == piece.entries[0][0]  # the stale view

    stamps = [BASE - 1, BASE + 5, BASE + 25, BASE + 50, BASE + 105, BASE + 150, BASE + 205, BASE + 999]
    expected = (
        20,
        [
            (20, BASE + 20), (20, BASE + 20), (25, BASE + 25), (30, BASE + 100), (35, BASE + 105),
            (60, BASE + 200), (65, BASE + 205), None,
        ],
    )  # fmt: skip
    assert _broker_answers(redis_server.url, keyspace, cold, topic, stamps) == expected
    assert _spark_answers(redis_server.url, keyspace, cold, topic, stamps) == expected

    # The cold tier trimmed to its end: the log starts in Redis for both, and times answer from there.
    other.trim(topic, 0, 60, vacuum=False)
    log.call(cold_marks.record(log.ks, topic, 0, trimmed_below=60))
    after = (40, [(40, BASE + 110), (40, BASE + 110), (40, BASE + 110), (40, BASE + 110)])
    assert _broker_answers(redis_server.url, keyspace, cold, topic, stamps[:4]) == after
    assert _spark_answers(redis_server.url, keyspace, cold, topic, stamps[:4]) == after


@pytest.mark.parametrize("offset, where", [(10, Tier.OUT_OF_RANGE), (30, Tier.COLD), (50, Tier.HOT)])
def test_a_fetch_offset_routes_by_the_marks(offset: int, where: Tier) -> None:
    assert tiers.route(offset, TierMarks(archived_end=60, cold_start=20), 40) is where
