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
from schooner.storage.redis import client
from schooner.storage.store import Store
from schooner.storage.topic_partition import TopicPartition
from schooner.storage.transactions import state as txn_state
from schooner.storage.transactions.state import COMPLETE_COMMIT, ONGOING, PREPARE_COMMIT
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
