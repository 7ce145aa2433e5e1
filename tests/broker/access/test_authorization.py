"""ACL enforcement on topics and the cluster, with real clients on a PLAINTEXT broker where every client is
User:ANONYMOUS (tests/broker/acl_rig.py): each denied path, then the same request allowed.

Produce, Fetch, Metadata (listing, named topics, auto-creation), CreateTopics, DeleteTopics,
CreatePartitions, DeleteRecords, ListOffsets, Describe/AlterConfigs, DescribeCluster and the cluster
admin APIs; LITERAL and PREFIXED patterns and DENY over ALLOW.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclOperation as CAclOperation,
)
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from confluent_kafka.admin import (
    ResourceType as CResourceType,
)

from tests.broker.acl_rig import CLUSTER, GROUP, PREFIXED, TOPIC, Op, Secured, T, error_of, secure

E = KafkaError


@pytest.fixture
def secured(broker_factory: Any) -> Secured:
    return secure(broker_factory)


def produce(bootstrap: str, topic: str, values: list[bytes], **conf: Any) -> list[Any]:
    """Produces and returns each delivery's error (None when delivered)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "message.timeout.ms": 5000, **conf})
    outcomes: list[Any] = []
    for v in values:
        producer.produce(topic, value=v, partition=0, on_delivery=lambda err, msg: outcomes.append(err))
    producer.flush(15)
    return outcomes


def codes(outcomes: list[Any]) -> list[int | None]:
    return [None if e is None else e.code() for e in outcomes]


# -- Produce ------------------------------------------------------------------------------------------
def test_produce_needs_write_on_the_topic(secured: Secured) -> None:
    secured.topic("pw")
    assert codes(produce(secured.bootstrap, "pw", [b"a"])) == [E.TOPIC_AUTHORIZATION_FAILED]
    secured.grant(TOPIC, "pw", Op.READ)  # READ (and the DESCRIBE it implies) is not enough
    assert codes(produce(secured.bootstrap, "pw", [b"a"])) == [E.TOPIC_AUTHORIZATION_FAILED]
    secured.grant(TOPIC, "pw", Op.WRITE)
    assert codes(produce(secured.bootstrap, "pw", [b"a", b"b"])) == [None, None]


def test_an_idempotent_producer_needs_write_on_some_topic(secured: Secured) -> None:
    secured.topic("idem")
    secured.grant(TOPIC, "idem", Op.DESCRIBE)  # Metadata passes; InitProducerId is refused
    producer = Producer({"bootstrap.servers": secured.bootstrap, "enable.idempotence": True})
    producer.produce("idem", b"a")
    with pytest.raises(KafkaException) as raised:
        for _ in range(50):
            producer.poll(0.2)
    error = raised.value.args[0]
    assert error.fatal() and error.code() == E.CLUSTER_AUTHORIZATION_FAILED
    secured.grant(TOPIC, "idem", Op.WRITE)  # WRITE on a topic makes a producer idempotent
    assert codes(produce(secured.bootstrap, "idem", [b"a", b"b"], **{"enable.idempotence": True})) == [
        None,
        None,
    ]


def test_prefixed_and_literal_grants_and_deny_beats_allow(secured: Secured) -> None:
    for name in ("sales-eu", "sales-us", "salesx", "other"):
        secured.topic(name)
    secured.grant(TOPIC, "sales-", Op.WRITE, pattern=PREFIXED)
    secured.grant(TOPIC, "other", Op.WRITE)
    secured.deny(TOPIC, "sales-us", Op.WRITE)
    assert codes(produce(secured.bootstrap, "sales-eu", [b"a"])) == [None]
    assert codes(produce(secured.bootstrap, "other", [b"a"])) == [None]
    assert codes(produce(secured.bootstrap, "salesx", [b"a"])) == [E.TOPIC_AUTHORIZATION_FAILED]
    assert codes(produce(secured.bootstrap, "sales-us", [b"a"])) == [E.TOPIC_AUTHORIZATION_FAILED]
    secured.deny(TOPIC, "sales-", Op.ALL, pattern=PREFIXED)  # a prefixed DENY beats the literal ALLOW too
    assert codes(produce(secured.bootstrap, "sales-eu", [b"a"])) == [E.TOPIC_AUTHORIZATION_FAILED]
    assert codes(produce(secured.bootstrap, "other", [b"a"])) == [None]


# -- Fetch and ListOffsets ----------------------------------------------------------------------------
def consume_assigned(
    bootstrap: str, topic: str, count: int, timeout: float = 10
) -> tuple[list[bytes], list[int]]:
    """Reads `count` records of partition 0 from the start, without a group; returns (values, errors)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    errors: list[int] = []
    deadline = time.monotonic() + timeout
    while len(values) < count and not errors and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            errors.append(msg.error().code())
        else:
            values.append(msg.value())
    consumer.close()
    return values, errors


def test_fetch_needs_read_on_the_topic(secured: Secured) -> None:
    secured.topic("fr")
    secured.grant(GROUP, "unused", Op.DESCRIBE)  # librdkafka looks the consumer's group up all the same
    secured.grant(TOPIC, "fr", Op.WRITE)
    assert codes(produce(secured.bootstrap, "fr", [b"x", b"y"])) == [None, None]
    values, errors = consume_assigned(secured.bootstrap, "fr", 2)
    assert values == [] and errors == [E.TOPIC_AUTHORIZATION_FAILED]
    secured.grant(TOPIC, "fr", Op.READ)
    assert consume_assigned(secured.bootstrap, "fr", 2) == ([b"x", b"y"], [])


# -- Metadata ------------------------------------------------------------------------------------------
def test_a_topic_listing_leaves_out_topics_the_principal_may_not_describe(secured: Secured) -> None:
    for name in ("seen-a", "seen-b", "hidden"):
        secured.topic(name)
    admin = secured.admin()
    assert set(admin.list_topics(timeout=T).topics) == set()
    secured.grant(TOPIC, "seen-", Op.DESCRIBE, pattern=PREFIXED)
    assert set(admin.list_topics(timeout=T).topics) == {"seen-a", "seen-b"}


def test_a_named_topic_the_principal_may_not_describe_is_refused_whether_or_not_it_exists(
    secured: Secured,
) -> None:
    secured.topic("exists")
    admin = secured.admin()
    for name in ("exists", "absent"):
        found = admin.list_topics(name, timeout=T).topics[name]
        assert found.error.code() == E.TOPIC_AUTHORIZATION_FAILED, name
    secured.grant(TOPIC, "exists", Op.DESCRIBE)
    assert admin.list_topics("exists", timeout=T).topics["exists"].error is None


def test_auto_creation_needs_create_on_the_cluster_or_the_topic(secured: Secured) -> None:
    admin = secured.admin()
    secured.grant(TOPIC, "auto-", Op.DESCRIBE, pattern=PREFIXED)
    found = admin.list_topics("auto-1", timeout=T).topics["auto-1"]  # librdkafka allows auto-creation
    assert found.error.code() == E.TOPIC_AUTHORIZATION_FAILED
    assert secured.broker.call(secured.broker.broker.ctx.topics.load("auto-1")) is None
    secured.grant(TOPIC, "auto-1", Op.CREATE)
    assert admin.list_topics("auto-1", timeout=T).topics["auto-1"].error is None
    secured.grant(CLUSTER, "", Op.CREATE)
    assert admin.list_topics("auto-2", timeout=T).topics["auto-2"].error is None


# -- CreateTopics, DeleteTopics, CreatePartitions ----------------------------------------------------------
def test_create_topics_needs_create_on_the_topic_or_the_cluster(secured: Secured) -> None:
    admin = secured.admin()
    futures = admin.create_topics([NewTopic("ct-a", 1), NewTopic("ct-b", 1)], request_timeout=T)
    assert [error_of(f) for f in futures.values()] == [E.TOPIC_AUTHORIZATION_FAILED] * 2
    secured.grant(TOPIC, "ct-a", Op.CREATE)
    futures = admin.create_topics([NewTopic("ct-a", 1), NewTopic("ct-b", 1)], request_timeout=T)
    assert {t: error_of(f) for t, f in futures.items()} == {"ct-a": 0, "ct-b": E.TOPIC_AUTHORIZATION_FAILED}
    secured.grant(CLUSTER, "", Op.CREATE)
    assert error_of(admin.create_topics([NewTopic("ct-b", 1)], request_timeout=T)["ct-b"]) == 0


def test_delete_topics_needs_delete_on_the_topic(secured: Secured) -> None:
    secured.topic("dt")
    admin = secured.admin()
    assert error_of(admin.delete_topics(["dt"], request_timeout=T)["dt"]) == E.TOPIC_AUTHORIZATION_FAILED
    assert secured.broker.call(secured.broker.broker.ctx.topics.load("dt")) is not None
    secured.grant(TOPIC, "dt", Op.DELETE)
    assert error_of(admin.delete_topics(["dt"], request_timeout=T)["dt"]) == 0


def test_create_partitions_needs_alter_on_the_topic(secured: Secured) -> None:
    secured.topic("cp")
    admin = secured.admin()
    grow = [NewPartitions("cp", 3)]
    assert error_of(admin.create_partitions(grow, request_timeout=T)["cp"]) == E.TOPIC_AUTHORIZATION_FAILED
    secured.grant(TOPIC, "cp", Op.ALTER)
    assert error_of(admin.create_partitions(grow, request_timeout=T)["cp"]) == 0


# -- configs --------------------------------------------------------------------------------------------
def _set(resource_type: Any, name: str, key: str, value: str) -> ConfigResource:
    entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
    return ConfigResource(resource_type, name, incremental_configs=[entry])


def test_topic_configs_need_describe_configs_and_alter_configs(secured: Secured) -> None:
    secured.topic("cfg")
    admin = secured.admin()
    described = admin.describe_configs([ConfigResource(CResourceType.TOPIC, "cfg")], request_timeout=T)
    assert [error_of(f) for f in described.values()] == [E.TOPIC_AUTHORIZATION_FAILED]
    altered = admin.incremental_alter_configs([_set(CResourceType.TOPIC, "cfg", "retention.ms", "1000")])
    assert [error_of(f) for f in altered.values()] == [E.TOPIC_AUTHORIZATION_FAILED]
    secured.grant(TOPIC, "cfg", Op.ALTER_CONFIGS)  # implies DESCRIBE_CONFIGS
    altered = admin.incremental_alter_configs([_set(CResourceType.TOPIC, "cfg", "retention.ms", "1000")])
    assert [error_of(f) for f in altered.values()] == [0]
    described = admin.describe_configs([ConfigResource(CResourceType.TOPIC, "cfg")], request_timeout=T)
    (future,) = described.values()
    assert future.result(T)["retention.ms"].value == "1000"


def test_broker_and_group_configs_need_the_cluster_and_the_group(secured: Secured) -> None:
    admin = secured.admin()
    broker = ConfigResource(CResourceType.BROKER, str(secured.broker.broker_id))
    assert [error_of(f) for f in admin.describe_configs([broker]).values()] == [
        E.CLUSTER_AUTHORIZATION_FAILED
    ]
    group = _set(CResourceType.GROUP, "cg", "consumer.session.timeout.ms", "50000")
    assert [error_of(f) for f in admin.incremental_alter_configs([group]).values()] == [
        E.GROUP_AUTHORIZATION_FAILED
    ]
    secured.grant(CLUSTER, "", Op.DESCRIBE_CONFIGS)
    secured.grant(GROUP, "cg", Op.ALTER_CONFIGS)
    assert [error_of(f) for f in admin.describe_configs([broker]).values()] == [0]
    assert [error_of(f) for f in admin.incremental_alter_configs([group]).values()] == [0]


# -- DescribeCluster ----------------------------------------------------------------------------------
def test_cluster_operations_are_reported_only_to_a_principal_that_may_describe_the_cluster(
    secured: Secured,
) -> None:
    # librdkafka's describe_cluster asks Metadata v10 (DescribeCluster itself: test_authorization_wire.py).
    admin = secured.admin()
    described = admin.describe_cluster(include_authorized_operations=True, request_timeout=T).result(T)
    assert not described.authorized_operations
    secured.grant(CLUSTER, "", Op.DESCRIBE, Op.ALTER_CONFIGS)
    described = admin.describe_cluster(include_authorized_operations=True, request_timeout=T).result(T)
    assert [n.id for n in described.nodes] == [secured.broker.broker_id]
    assert set(described.authorized_operations) == {
        CAclOperation.DESCRIBE, CAclOperation.ALTER_CONFIGS, CAclOperation.DESCRIBE_CONFIGS
    }  # fmt: skip
