"""The transaction coordinator against a real redis-server: fencing, the two-phase end, and a broker
taking over an end that a crashed broker left half done."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from kio.schema.errors import ErrorCode

from schooner.coordinators.transactions import Producer, TransactionCoordinator, TransactionError
from schooner.storage.keys import Keyspace
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.log.transactions import NOTHING_OPEN
from schooner.storage.redis import client
from schooner.storage.store import Store
from schooner.storage.topic_partition import TopicPartition
from schooner.storage.transactions import state as txn_state
from schooner.storage.transactions.state import COMPLETE_COMMIT, ONGOING, PREPARE_ABORT, PREPARE_COMMIT
from tests.coordinators.helpers import broker, sees


def _coordinator(store: Store, broker_id: int) -> TransactionCoordinator:
    me = broker(broker_id)

    async def topic_of(name: str):  # type: ignore[no-untyped-def]
        return await store.topic(name, {})

    return TransactionCoordinator(store, me, sees(me), topic_of, 900_000, 604_800_000)


async def _prepared_then_crashed(url: str, ks: Keyspace) -> None:
    store = Store(client.connect(url), ks)
    try:
        topic = await store.create_topic("tc", 1, {}, {})
        first = _coordinator(store, 1)
        producer = await first.init_producer("t1", 60_000, None)
        await first.add("t1", producer, [TopicPartition("tc", 0)])
        batch = RecordBatch([Record(0, b"k", b"v")], producer.producer_id, producer.producer_epoch, 0)
        assert (await store.append(topic, 0, batch, transactional_id="t1")).status == 0
        _, stable = await store.stable_bounds(topic, 0)
        assert stable == 0  # the open transaction holds the LSO at its first record

        # The first broker wrote PrepareCommit and died before any marker: the state says so.
        stored = await store.run(txn_state.load(ks, "t1"))
        assert stored.state is not None and stored.state.state == ONGOING
        prepared = dataclasses.replace(stored.state, state=PREPARE_COMMIT, updated_ms=0)
        await store.drive(txn_state.save(ks, "t1", stored.version, prepared))

        # Another broker's sweep finds the stale PrepareCommit and completes it.
        second = _coordinator(store, 2)
        assert await second.sweep() == 1
        done = await second.state_of("t1")
        assert done is not None and done.state == COMPLETE_COMMIT and done.partitions == ()
        bounds, stable = await store.stable_bounds(topic, 0)
        assert stable == bounds.high_watermark == 2  # the record and its commit marker

        # The old producer's epoch still works for v1 (no bump), a stale one is fenced.
        with pytest.raises(TransactionError) as fenced:
            await second.add("t1", Producer(producer.producer_id, producer.producer_epoch - 1), [])
        assert fenced.value.code == ErrorCode.producer_fenced
        again = await second.init_producer("t1", 60_000, None)
        assert again == Producer(producer.producer_id, producer.producer_epoch + 1)
    finally:
        await store.close()


def test_another_broker_completes_an_end_a_crashed_broker_prepared(redis_server, keyspace) -> None:
    asyncio.run(_prepared_then_crashed(redis_server.url, Keyspace(keyspace)))


async def _timeout_too_long(url: str, ks: Keyspace) -> None:
    store = Store(client.connect(url), ks)
    try:
        with pytest.raises(TransactionError) as caught:
            await _coordinator(store, 1).init_producer("t2", 900_001, None)
        assert caught.value.code == ErrorCode.invalid_transaction_timeout
    finally:
        await store.close()


def test_a_timeout_above_the_maximum_is_refused(redis_server, keyspace) -> None:
    asyncio.run(_timeout_too_long(redis_server.url, Keyspace(keyspace)))


async def _late_marker(url: str, ks: Keyspace) -> None:
    store = Store(client.connect(url), ks)
    try:
        topic = await store.create_topic("late", 1, {}, {})
        first, second = _coordinator(store, 1), _coordinator(store, 2)
        producer = await first.init_producer("t3", 60_000, None)
        tp = TopicPartition("late", 0)

        async def append(seq: int) -> None:
            batch = RecordBatch([Record(0, None, b"s%d" % seq)], producer.producer_id, 0, seq)
            assert (await store.append(topic, 0, batch, transactional_id="t3")).status == 0

        # Transaction 1 ends in abort. Its first broker prepared it and sent its marker, which a frozen
        # link holds; another broker completes the end meanwhile.
        await first.add("t3", producer, [tp])
        await append(0)
        stored = await store.run(txn_state.load(ks, "t3"))
        assert stored.state is not None
        prepared = dataclasses.replace(stored.state, state=PREPARE_ABORT, updated_ms=0)
        version = await store.drive(txn_state.save(ks, "t3", stored.version, prepared))
        assert await second.sweep() == 1
        # Transaction 2 begins (the same epoch: transactions v1) and appends.
        await first.add("t3", producer, [tp])
        await append(1)
        # The held marker of transaction 1 arrives now: it is stale and writes nothing.
        late = await store.write_markers([(topic, 0)], producer.producer_id, 0, False, end_version=version)
        assert late[0].status == NOTHING_OPEN
        bounds, stable = await store.stable_bounds(topic, 0)
        assert (bounds.high_watermark, stable) == (3, 2)  # s0, its abort marker, s1 still open
        await first.end("t3", producer, commit=True, bump=False, fenced=ErrorCode.producer_fenced)
        read = await store.read(topic, 0, 0, 10, committed=True)
        assert read.high_watermark == read.last_stable_offset == 4  # s0, abort, s1, commit
        assert [(a.producer_id, a.first_offset) for a in read.aborted] == [(producer.producer_id, 0)]
    finally:
        await store.close()


def test_a_late_marker_of_an_end_another_broker_completed_leaves_the_next_transaction(
    redis_server, keyspace
) -> None:
    asyncio.run(_late_marker(redis_server.url, Keyspace(keyspace)))
