"""Dense offsets (the default for new topics) through real clients: offsets count records from 0, lag is
end minus committed, tail reads work, plain Redis writers append with `0-*`, a `*` entry stops appends
to its partition only, and timestamp-encoded topics keep working beside dense ones."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import redis
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kio.schema.errors import ErrorCode

from schooner.ops.cli import main
from schooner.storage.keys import Keyspace
from schooner.storage.redis.embedded import free_port
from tests.clients import confluent_consume, consume, kcat
from tests.wire import call, produce_request

T = 10


def _create(broker: Any, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(T)


def _confluent_one_per_batch(
    bootstrap: str, topic: str, values: list[bytes], partition: int = 0
) -> list[int]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    offsets: list[int] = []

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        offsets.append(msg.offset())

    for value in values:
        producer.produce(topic, value=value, partition=partition, on_delivery=delivered)
        assert producer.flush(T) == 0
    return offsets


def _kafka_python_one_per_batch(bootstrap: str, topic: str, values: list[bytes]) -> list[int]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    offsets = []
    for value in values:
        future = producer.send(topic, value=value, partition=0)
        producer.flush(T)
        offsets.append(future.get(T).offset)
    producer.close()
    return offsets


def _aiokafka_one_per_batch(bootstrap: str, topic: str, values: list[bytes]) -> list[int]:
    from aiokafka import AIOKafkaProducer

    async def run() -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        await producer.start()
        try:
            return [(await producer.send_and_wait(topic, v, partition=0)).offset for v in values]
        finally:
            await producer.stop()

    return asyncio.run(run())


def test_offsets_count_records_from_zero_for_every_client(broker: Any) -> None:
    values = [b"r%d" % i for i in range(6)]
    producers = {
        "confluent": _confluent_one_per_batch,
        "kafka-python": _kafka_python_one_per_batch,
        "aiokafka": _aiokafka_one_per_batch,
    }
    for client, produce in producers.items():
        topic = f"dense-{client}"
        _create(broker, topic)
        assert produce(broker.bootstrap, topic, values) == list(range(6)), client
        got = confluent_consume(broker.bootstrap, topic, 6)
        assert [(m.offset(), m.value()) for m in got] == list(enumerate(values)), client


def _confluent_lag(bootstrap: str, topic: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        (committed,) = consumer.committed([TopicPartition(topic, 0)], timeout=T)
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=T)
        return int(high - committed.offset)
    finally:
        consumer.close()


def _kafka_python_lag(bootstrap: str, topic: str, group: str) -> int:
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka import TopicPartition as KTP

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = KTP(topic, 0)
        committed = admin.list_group_offsets({group: [tp]})[group][tp].offset
        return int(consumer.end_offsets([tp])[tp] - committed)
    finally:
        consumer.close()
        admin.close()


def _aiokafka_lag(bootstrap: str, topic: str, group: str) -> int:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP

    async def run() -> int:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = ATP(topic, 0)
            committed = await consumer.committed(tp)
            return int((await consumer.end_offsets([tp]))[tp] - committed)
        finally:
            await consumer.stop()

    return asyncio.run(run())


def test_lag_is_the_end_offset_less_the_committed_one(broker: Any) -> None:
    n, k = 12, 5
    _create(broker, "lagged")
    _confluent_one_per_batch(broker.bootstrap, "lagged", [b"v%d" % i for i in range(n)])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition("lagged", 0, -2)])
    seen: list[Any] = []
    deadline = time.monotonic() + 20
    while len(seen) < k and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            seen.append(m)
    assert [m.offset() for m in seen] == list(range(k))
    consumer.commit(message=seen[-1], asynchronous=False)  # k of n consumed
    consumer.close()

    for client, lag in (("confluent", _confluent_lag), ("kafka-python", _kafka_python_lag),
                        ("aiokafka", _aiokafka_lag)):  # fmt: skip
        assert lag(broker.bootstrap, "lagged", "g") == n - k, client
    args = ["groups", "lag", "g", "--redis-url", broker.redis_url, "--keyspace", broker.settings.keyspace]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in result.output.splitlines()]
    assert (row["committed"], row["end_offset"], row["lag_records"], row["exact"]) == (k, n, n - k, True)


def test_kcat_reads_the_last_five_records_from_the_tail(broker: Any) -> None:
    _create(broker, "tail")
    _confluent_one_per_batch(broker.bootstrap, "tail", [b"t%d" % i for i in range(12)])
    out = kcat("-b", broker.bootstrap, "-C", "-t", "tail", "-o", "-5", "-e", "-f", "%o %s\n")
    assert out.splitlines() == [f"{i} t{i}" for i in range(7, 12)]


def _stream(broker: Any, topic: str, partition: int = 0) -> str:
    return Keyspace(broker.settings.keyspace).stream(topic, partition)


def test_a_plain_redis_append_with_0_star_takes_the_next_offset(
    broker: Any, redis_client: redis.Redis
) -> None:
    _create(broker, "plain")
    assert _confluent_one_per_batch(broker.bootstrap, "plain", [b"a", b"b", b"c"]) == [0, 1, 2]
    stamp = int(time.time() * 1000)
    fields = {"timestamp": str(stamp), "key": b"rk", "value": b"from redis"}
    assert redis_client.xadd(_stream(broker, "plain"), fields, id="0-*") == b"0-4"
    (native,) = confluent_consume(broker.bootstrap, "plain", 1, offset=3)
    assert (native.offset(), native.key(), native.value(), native.timestamp()[1]) == (
        3,
        b"rk",
        b"from redis",
        stamp,
    )
    assert _confluent_one_per_batch(broker.bootstrap, "plain", [b"after"]) == [4]
    got = confluent_consume(broker.bootstrap, "plain", 5)
    assert [(m.offset(), m.value()) for m in got] == list(
        enumerate([b"a", b"b", b"c", b"from redis", b"after"])
    )


def _refusals(broker: Any, topic: str, partition: int) -> float:
    labels = {"topic": topic, "partition": str(partition)}
    registry = broker.broker.metrics.registry
    return registry.get_sample_value("schooner_foreign_entry_refusals_total", labels) or 0.0


def test_a_star_entry_ends_its_partition_for_producers_only(
    broker_factory: Any, redis_client: redis.Redis
) -> None:
    broker = broker_factory(metrics_port=free_port())  # the refusal is counted in the broker's metrics
    _create(broker, "starred", partitions=2)
    _confluent_one_per_batch(broker.bootstrap, "starred", [b"a", b"b"])
    redis_client.xadd(_stream(broker, "starred"), {"value": b"plain 0-*"}, id="0-*")
    star = redis_client.xadd(_stream(broker, "starred"), {"value": b"star"}, id="*").decode()
    assert not star.startswith("0-")

    # Consumers read every record up to the `*` entry, and nothing after or made up.
    got = consume(broker.bootstrap, [("starred", 0, -2)], 10, timeout=3)
    assert [(m.offset(), m.value()) for m in got] == [(0, b"a"), (1, b"b"), (2, b"plain 0-*")]
    probe = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    try:
        assert probe.get_watermark_offsets(TopicPartition("starred", 0), timeout=T) == (0, 3)
    finally:
        probe.close()

    # Producing to that partition is refused, retriably, with a message naming the entry.
    before = _refusals(broker, "starred", 0)
    answer = call(broker.port, produce_request("starred", [b"refused"])).responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.kafka_storage_error
    assert star in (answer.error_message or "") and "0-*" in (answer.error_message or "")
    assert _refusals(broker, "starred", 0) == before + 1
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 1500, "linger.ms": 0})
    producer.produce("starred", value=b"kept back", partition=0, on_delivery=lambda e, m: errors.append(e))
    producer.flush(T)
    # KAFKA_STORAGE_ERROR is retriable: the client retries until its message timeout runs out.
    assert len(errors) == 1 and errors[0] is not None and errors[0].code() == KafkaError._MSG_TIMED_OUT
    assert len(consume(broker.bootstrap, [("starred", 0, -2)], 10, timeout=2)) == 3

    # The other partition and other topics go on as before.
    assert _confluent_one_per_batch(broker.bootstrap, "starred", [b"p1"], partition=1) == [0]
    _create(broker, "unstarred")
    assert _confluent_one_per_batch(broker.bootstrap, "unstarred", [b"x", b"y"]) == [0, 1]
    assert [m.value() for m in consume(broker.bootstrap, [("starred", 1, -2)], 1)] == [b"p1"]


def _encodings(broker: Any, *topics: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
    described = admin.describe_configs(resources, request_timeout=T)
    return {r.name: described[r].result(T)["schooner.offset.encoding"].value for r in resources}


def _produce_with_every_client(broker: Any, topic: str, base_ms: int) -> list[int]:
    """Two records from each Python client, one per batch, then one from kcat; returns their offsets.
    Record i has timestamp base_ms + i * 1000 (kcat's is the broker's clock)."""
    from aiokafka import AIOKafkaProducer
    from kafka import KafkaProducer

    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(2):
        producer.produce(topic, value=b"c%d" % i, partition=0, timestamp=base_ms + i * 1000,
                         on_delivery=lambda e, m: offsets.append(m.offset()))  # fmt: skip
        assert producer.flush(T) == 0
    kp = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(2, 4):
        future = kp.send(topic, value=b"k%d" % i, partition=0, timestamp_ms=base_ms + i * 1000)
        kp.flush(T)
        offsets.append(future.get(T).offset)
    kp.close()

    async def aio() -> None:
        ap = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
        await ap.start()
        try:
            for i in range(4, 6):
                sent = await ap.send_and_wait(topic, b"a%d" % i, partition=0, timestamp_ms=base_ms + i * 1000)
                offsets.append(sent.offset)
        finally:
            await ap.stop()

    asyncio.run(aio())
    kcat("-b", broker.bootstrap, "-P", "-t", topic, "-p", "0", stdin=b"kcat\n")
    return offsets


def test_timestamp_encoded_topics_work_beside_dense_ones(broker: Any) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    _create(broker, "legacy", **{"schooner.offset.encoding": "timestamp"})
    _create(broker, "modern")
    assert _encodings(broker, "legacy", "modern") == {"legacy": "timestamp", "modern": "dense"}
    base = int(time.time() * 1000) - 60_000
    written = {topic: _produce_with_every_client(broker, topic, base) for topic in ("legacy", "modern")}
    assert written["modern"] == list(range(6))
    legacy = written["legacy"]
    assert legacy == sorted(set(legacy)) and legacy[0] > 1 << 40  # (ms << bits) | seq
    values = [b"c0", b"c1", b"k2", b"k3", b"a4", b"a5", b"kcat"]

    for topic in ("legacy", "modern"):
        got = confluent_consume(broker.bootstrap, topic, 7)
        assert [m.value() for m in got] == values, topic
        offsets = [m.offset() for m in got]
        assert offsets[:6] == written[topic] and offsets[6] > offsets[5], topic
        kp = KafkaConsumer(
            bootstrap_servers=broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=2000
        )
        tp = KTP(topic, 0)
        kp.assign([tp])
        kp.seek_to_beginning()
        assert [(r.offset, r.value) for r in kp] == list(zip(offsets, values, strict=True)), topic
        # ListOffsets by time: the first record at or after base + 2500 is k3, from each client.
        assert kp.offsets_for_times({tp: base + 2500})[tp].offset == offsets[3], topic
        kp.close()
        kcat_out = kcat("-b", broker.bootstrap, "-C", "-t", topic, "-e", "-f", "%o %s\n").splitlines()
        assert kcat_out == [f"{o} {v.decode()}" for o, v in zip(offsets, values, strict=True)], topic
        times = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
        (found,) = times.offsets_for_times([TopicPartition(topic, 0, base + 4000)], timeout=T)
        times.close()
        assert found.offset == offsets[4], topic

        # A group commits through confluent-kafka; aiokafka sees the commit and resumes after it.
        group = f"side-by-side-{topic}"
        member = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
        )
        member.commit(offsets=[TopicPartition(topic, 0, offsets[5])], asynchronous=False)
        (committed,) = member.committed([TopicPartition(topic, 0)], timeout=T)
        member.close()
        assert committed.offset == offsets[5], topic

        async def resume(topic: str = topic, group: str = group) -> tuple[int, list[bytes]]:
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                                        enable_auto_commit=False)  # fmt: skip
            await consumer.start()
            try:
                tp = ATP(topic, 0)
                consumer.assign([tp])
                position = await consumer.committed(tp)
                got = await consumer.getmany(tp, timeout_ms=5000)
                return position, [r.value for r in got.get(tp, [])]
            finally:
                await consumer.stop()

        position, rest = asyncio.run(resume())
        assert (position, rest) == (offsets[5], [b"a5", b"kcat"]), topic
