"""Kafka's internal topics, __consumer_offsets and __transaction_state (broker/metadata/internal_topics.py):
listed and described marked internal with Kafka's 50 partitions, empty to readers, refused to writers,
and never stored, through aiokafka, kafka-python and confluent-kafka."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient
from kio.schema.errors import ErrorCode

from tests.conftest import redis_for
from tests.wire import call, produce_request

T = 10  # seconds for any one client call
INTERNAL = {"__consumer_offsets", "__transaction_state"}


def _stored_keys(broker: Any) -> list[bytes]:
    """Every Redis key of the broker's keyspace that names an internal topic."""
    client = redis_for(broker.redis_url)
    return [k for k in client.scan_iter(f"{broker.settings.keyspace}*") if b"__consumer_offsets" in k
            or b"__transaction_state" in k]  # fmt: skip


def _stored_topic(broker: Any, name: str) -> Any:
    return broker.call(broker.broker.ctx.store.topic(name, {}))


def _create(broker: Any, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept alive until the answer
    admin.create_topics([NewTopic(name, 1)], request_timeout=T)[name].result(T)


def test_aiokafka_sees_them_internal_and_asking_by_name_creates_nothing(broker: Any) -> None:
    async def run() -> tuple[list[Any], list[str], set[str]]:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            described = await admin.describe_topics(sorted(INTERNAL))
            listed = await admin.list_topics()
        finally:
            await admin.close()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, exclude_internal_topics=True)
        await consumer.start()
        try:
            seen = await consumer.topics()
        finally:
            await consumer.stop()
        return described, listed, seen

    _create(broker, "ordinary")
    described, listed, seen = asyncio.run(run())
    assert {t["topic"]: (t["error_code"], t["is_internal"], len(t["partitions"])) for t in described} == {
        "__consumer_offsets": (0, True, 50),
        "__transaction_state": (0, True, 50),
    }
    assert set(listed) >= INTERNAL
    assert "ordinary" in seen and not INTERNAL & seen  # exclude_internal_topics goes by the flag
    assert _stored_topic(broker, "__consumer_offsets") is None
    assert _stored_topic(broker, "__transaction_state") is None


def test_kafka_python_leaves_them_out_of_a_consumer_s_topics_and_lists_them_in_admin(broker: Any) -> None:
    _create(broker, "plain")
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        topics = consumer.topics()
    finally:
        consumer.close()
    assert "plain" in topics and not INTERNAL & topics
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=T * 1000)
    try:
        assert set(admin.list_topics()) >= INTERNAL
    finally:
        admin.close()


def test_confluent_lists_them_with_leaders_and_reads_them_empty(broker: Any) -> None:
    metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=T)
    for name in INTERNAL:
        topic = metadata.topics[name]
        assert topic.error is None and len(topic.partitions) == 50
        assert {p.leader for p in topic.partitions.values()} == {broker.broker_id}
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "tail-offsets", "enable.partition.eof": True}
    )
    try:
        partition = TopicPartition("__consumer_offsets", 7, 0)
        assert consumer.get_watermark_offsets(partition, timeout=T) == (0, 0)
        consumer.assign([partition])
        msg = consumer.poll(T)
        assert msg is not None and msg.error().code() == KafkaError._PARTITION_EOF
        # Offsets of an internal topic's partition are committed like any others.
        consumer.commit(offsets=[partition], asynchronous=False)
        (committed,) = consumer.committed([partition], timeout=T)
        assert committed.error is None and committed.offset == 0
    finally:
        consumer.close()
    assert _stored_topic(broker, "__consumer_offsets") is None


def test_produce_and_auto_create_are_refused(broker: Any) -> None:
    response = call(broker.port, produce_request("__transaction_state", [b"forged"]))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.invalid_topic_exception
    assert _stored_topic(broker, "__transaction_state") is None
    assert _stored_keys(broker) == []


def test_admin_changes_are_refused_as_kafka_refuses_them(broker: Any) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def error_of(future: Any) -> Any:
        with pytest.raises(KafkaException) as raised:
            future.result(T)
        return raised.value.args[0].code()

    created = admin.create_topics([NewTopic("__consumer_offsets", 3)], request_timeout=T)
    assert error_of(created["__consumer_offsets"]) == KafkaError.TOPIC_ALREADY_EXISTS
    deleted = admin.delete_topics(["__consumer_offsets"], request_timeout=T)
    assert error_of(deleted["__consumer_offsets"]) == KafkaError.INVALID_REQUEST
    grown = admin.create_partitions([NewPartitions("__transaction_state", 60)], request_timeout=T)
    assert error_of(grown["__transaction_state"]) == KafkaError.INVALID_REQUEST
    resource = ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets")
    configs = admin.describe_configs([resource], request_timeout=T)[resource].result(T)
    assert configs["cleanup.policy"].value == "compact"
    assert _stored_topic(broker, "__consumer_offsets") is None
    # Kafka allows names that merely start with "__".
    _create(broker, "__my_own")
    assert _stored_topic(broker, "__my_own") is not None


def test_a_stored_topic_of_an_internal_name_is_hidden_and_can_be_deleted(broker: Any) -> None:
    """Older versions auto-created an ordinary __consumer_offsets: Metadata shows the internal one, and
    DeleteTopics removes the stored one."""
    ctx = broker.broker.ctx
    broker.call(ctx.store.create_topic("__consumer_offsets", 1, {}, ctx.topic_defaults))
    metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=T)
    assert len(metadata.topics["__consumer_offsets"].partitions) == 50
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics(["__consumer_offsets"], request_timeout=T)["__consumer_offsets"].result(T)
    assert _stored_topic(broker, "__consumer_offsets") is None
