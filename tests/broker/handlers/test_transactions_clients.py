"""Transactions (v1) with kafka-python and aiokafka: commit and abort as read_committed and
read_uncommitted consumers see them, offsets sent to a transaction, and the transaction admin APIs
(DescribeTransactions, ListTransactions) through kafka-python's KafkaAdminClient."""

from __future__ import annotations

import asyncio
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as ATP
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTP
from kafka.structs import OffsetAndMetadata


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def _kp_producer(bootstrap: str, transactional_id: str) -> KafkaProducer:
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id, linger_ms=5)
    producer.init_transactions()
    return producer


def _kp_read(bootstrap: str, topic: str, isolation: str, expect: int, partitions: int = 1) -> list[bytes]:
    """Values kafka-python reads from the start of every partition (in partition then offset order),
    waiting for `expect` of them and then a little longer, to see that no more come."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False)
    tps = [KTP(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    try:
        deadline = time.monotonic() + 10
        settle: float | None = None
        while time.monotonic() < (settle or deadline):
            for tp, batch in consumer.poll(200).items():
                got[tp.partition].extend(m.value for m in batch)
            if settle is None and sum(map(len, got.values())) >= expect:
                settle = time.monotonic() + 0.5
    finally:
        consumer.close()
    return [v for p in range(partitions) for v in got[p]]


def _aio_read(bootstrap: str, topic: str, isolation: str, expect: int) -> list[bytes]:
    async def run() -> list[bytes]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False
        )
        await consumer.start()
        out: list[bytes] = []
        try:
            consumer.assign([ATP(topic, 0)])
            await consumer.seek_to_beginning()
            deadline = time.monotonic() + 10
            settle: float | None = None
            while time.monotonic() < (settle or deadline):
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    out.extend(m.value for m in batch)
                if settle is None and len(out) >= expect:
                    settle = time.monotonic() + 0.5
        finally:
            await consumer.stop()
        return out

    return asyncio.run(run())


def _committed(bootstrap: str, group: str, tp: KTP, isolation: str = "read_uncommitted") -> int | None:
    """The group's committed offset of tp, as a kafka-python consumer of the group reads it
    (read_committed asks for stable offsets: Kafka refuses while a transaction holds one)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, isolation_level=isolation
    )
    try:
        offset: int | None = consumer.committed(tp)
        return offset
    finally:
        consumer.close()


# -- kafka-python ---------------------------------------------------------------------------------


def test_kafka_python_commit_and_abort(broker) -> None:
    _create(broker.bootstrap, "kp-txn", partitions=2)
    producer = _kp_producer(broker.bootstrap, "kp-tx")
    try:
        producer.begin_transaction()
        for i in range(3):
            producer.send("kp-txn", value=b"c%d" % i, partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(2):
            producer.send("kp-txn", value=b"a%d" % i, partition=i % 2)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("kp-txn", value=b"c3", partition=1)
        producer.commit_transaction()
    finally:
        producer.close()

    assert _kp_read(broker.bootstrap, "kp-txn", "read_committed", 4, 2) == [b"c0", b"c2", b"c1", b"c3"]
    assert _kp_read(broker.bootstrap, "kp-txn", "read_uncommitted", 6, 2) == [
        b"c0", b"c2", b"a0", b"c1", b"a1", b"c3",
    ]  # fmt: skip


def test_kafka_python_read_committed_stops_at_an_open_transaction(broker) -> None:
    _create(broker.bootstrap, "kp-lso")
    plain = KafkaProducer(bootstrap_servers=broker.bootstrap)
    plain.send("kp-lso", value=b"before").get(10)
    producer = _kp_producer(broker.bootstrap, "kp-lso-tx")
    try:
        producer.begin_transaction()
        producer.send("kp-lso", value=b"open").get(10)
        plain.send("kp-lso", value=b"after").get(10)
        assert _kp_read(broker.bootstrap, "kp-lso", "read_committed", 1) == [b"before"]
        assert _kp_read(broker.bootstrap, "kp-lso", "read_uncommitted", 3) == [b"before", b"open", b"after"]
        producer.commit_transaction()
    finally:
        producer.close()
        plain.close()
    assert _kp_read(broker.bootstrap, "kp-lso", "read_committed", 3) == [b"before", b"open", b"after"]


def test_kafka_python_offsets_in_a_transaction(broker) -> None:
    _create(broker.bootstrap, "kp-in")
    _create(broker.bootstrap, "kp-out")
    tp = KTP("kp-in", 0)
    group = "kp-eos"
    producer = _kp_producer(broker.bootstrap, "kp-eos-tx")
    try:
        producer.begin_transaction()
        producer.send("kp-out", value=b"x1")
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(7, "m", -1)}, group)
        producer.flush()
        assert _committed(broker.bootstrap, group, tp) is None  # pending, not committed
        # Asking for stable offsets, the consumer hears UNSTABLE_OFFSET_COMMIT and retries until the
        # transaction ends.
        with ThreadPoolExecutor(1) as pool:
            stable = pool.submit(_committed, broker.bootstrap, group, tp, "read_committed")
            time.sleep(1.5)
            assert not stable.done()
            producer.commit_transaction()
            assert stable.result(15) == 7
        assert _committed(broker.bootstrap, group, tp) == 7
        assert _committed(broker.bootstrap, group, tp, "read_committed") == 7

        producer.begin_transaction()
        producer.send("kp-out", value=b"x2")
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(9, "", -1)}, group)
        producer.abort_transaction()
    finally:
        producer.close()
    assert _committed(broker.bootstrap, group, tp) == 7  # the aborted 9 never shows
    assert _committed(broker.bootstrap, group, tp, "read_committed") == 7
    assert _kp_read(broker.bootstrap, "kp-out", "read_committed", 1) == [b"x1"]


# -- aiokafka -------------------------------------------------------------------------------------


class _Abort(Exception):
    """Raised inside aiokafka's transaction() context, which then aborts the transaction."""


def test_aiokafka_transaction_context(broker) -> None:
    _create(broker.bootstrap, "aio-txn")

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio-tx")
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(3):
                    await producer.send("aio-txn", value=b"c%d" % i, partition=0)
            with pytest.raises(_Abort):
                async with producer.transaction():
                    sent = await producer.send("aio-txn", value=b"a0", partition=0)
                    await sent  # on the broker before the abort
                    raise _Abort
            async with producer.transaction():
                await producer.send("aio-txn", value=b"c3", partition=0)
        finally:
            await producer.stop()

    asyncio.run(run())
    assert _aio_read(broker.bootstrap, "aio-txn", "read_committed", 4) == [b"c0", b"c1", b"c2", b"c3"]
    assert _aio_read(broker.bootstrap, "aio-txn", "read_uncommitted", 5) == [
        b"c0", b"c1", b"c2", b"a0", b"c3",
    ]  # fmt: skip
    # kafka-python's read_committed consumer agrees with aiokafka's
    assert _kp_read(broker.bootstrap, "aio-txn", "read_committed", 4) == [b"c0", b"c1", b"c2", b"c3"]


async def _aio_committed(bootstrap: str, group: str, tp: ATP) -> int | None:
    """The group's committed offset of tp, as an aiokafka consumer of the group reads it."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        offset: int | None = await consumer.committed(tp)
        return offset
    finally:
        await consumer.stop()


def test_aiokafka_offsets_in_a_transaction(broker) -> None:
    _create(broker.bootstrap, "aio-in")
    _create(broker.bootstrap, "aio-out")
    group = "aio-eos"
    tp = ATP("aio-in", 0)
    seen: dict[str, int | None] = {}

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio-eos-tx")
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send("aio-out", value=b"y1")
                await producer.send_offsets_to_transaction({tp: 5}, group)
                seen["open"] = await _aio_committed(broker.bootstrap, group, tp)
            seen["committed"] = await _aio_committed(broker.bootstrap, group, tp)
            with pytest.raises(_Abort):
                async with producer.transaction():
                    await producer.send("aio-out", value=b"y2")
                    await producer.send_offsets_to_transaction({tp: 11}, group)
                    seen["aborting"] = await _aio_committed(broker.bootstrap, group, tp)
                    raise _Abort
            seen["aborted"] = await _aio_committed(broker.bootstrap, group, tp)
        finally:
            await producer.stop()

    asyncio.run(run())
    assert seen == {"open": None, "committed": 5, "aborting": 5, "aborted": 5}
    assert _committed(broker.bootstrap, group, KTP("aio-in", 0)) == 5  # kafka-python agrees
    assert _aio_read(broker.bootstrap, "aio-out", "read_committed", 1) == [b"y1"]


# -- DescribeTransactions and ListTransactions (kafka-python's admin) -------------------------------


def _listed(admin: KafkaAdminClient, **filters: Any) -> dict[str, tuple[str, int]]:
    """transactional id -> (state, producer id), over every broker's answer."""
    out = {}
    for listings in admin.list_transactions(**filters).values():
        for t in listings:
            out[t.transactional_id] = (str(getattr(t.state, "value", t.state)), t.producer_id)
    return out


def test_describe_and_list_transactions(broker) -> None:
    _create(broker.bootstrap, "adm-txn", partitions=3)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    open_tx = _kp_producer(broker.bootstrap, "adm-open")
    done_tx = _kp_producer(broker.bootstrap, "adm-done")
    try:
        open_tx.begin_transaction()
        open_tx.send("adm-txn", value=b"o", partition=0).get(10)
        open_tx.send("adm-txn", value=b"o", partition=2).get(10)
        done_tx.begin_transaction()
        done_tx.send("adm-txn", value=b"d", partition=1)
        done_tx.commit_transaction()

        described = admin.describe_transactions(["adm-open", "adm-done"])
        o, d = described["adm-open"], described["adm-done"]
        assert str(o.state.value) == "Ongoing"
        assert o.topic_partitions == {KTP("adm-txn", 0), KTP("adm-txn", 2)}
        assert o.transaction_timeout_ms == 60000  # kafka-python's default transaction_timeout_ms
        assert o.transaction_start_time_ms > 0
        assert str(d.state.value) == "CompleteCommit"
        assert d.topic_partitions == set()
        assert o.producer_id != d.producer_id

        everything = _listed(admin)
        assert everything["adm-open"] == ("Ongoing", o.producer_id)
        assert everything["adm-done"] == ("CompleteCommit", d.producer_id)
        assert set(_listed(admin, state_filters=["Ongoing"])) == {"adm-open"}
        assert set(_listed(admin, state_filters=["CompleteCommit"])) == {"adm-done"}
        assert set(_listed(admin, producer_id_filters=[d.producer_id])) == {"adm-done"}
        assert _listed(admin, state_filters=["Ongoing"], producer_id_filters=[d.producer_id]) == {}

        open_tx.commit_transaction()
        after = admin.describe_transactions(["adm-open"])["adm-open"]
        assert (str(after.state.value), after.topic_partitions) == ("CompleteCommit", set())
        assert after.producer_id == o.producer_id  # v1 ends keep the producer id and epoch
        assert after.producer_epoch == o.producer_epoch
        assert set(_listed(admin, state_filters=["Ongoing"])) == set()
    finally:
        open_tx.close()
        done_tx.close()
        admin.close()


def test_describe_an_unknown_transactional_id(broker) -> None:
    from kafka.errors import TransactionalIdNotFoundError

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        with pytest.raises(TransactionalIdNotFoundError):
            admin.describe_transactions([f"never-{uuid.uuid4().hex}"])
    finally:
        admin.close()
