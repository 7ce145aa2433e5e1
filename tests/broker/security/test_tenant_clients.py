"""Tenants end to end, as users meet them: alice (tenant a) and bob (tenant b) log in with SCRAM over
SASL_PLAINTEXT with real clients. Each creates a topic `orders` and a group `g`; neither can list, read
or write the other's, whatever the client, and a user without a tenant sees neither."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.storage.keys import Keyspace
from tests.broker.sasl_rig import (
    SASL_LISTENER,
    add_user,
    confluent_conf,
    kcat_sasl,
    python_conf,
    sasl_bootstrap,
)
from tests.clients import Rec, aiokafka_consume, confluent_produce, kafka_python_produce
from tests.conftest import redis_for

MECHANISM = "SCRAM-SHA-512"
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}


@pytest.fixture
def tenant_broker(broker_factory: Any, redis_server: Any, keyspace: str) -> Any:
    add_user(redis_server.url, keyspace, "alice", PASSWORDS["alice"], tenant="a")
    add_user(redis_server.url, keyspace, "bob", PASSWORDS["bob"], tenant="b")
    add_user(redis_server.url, keyspace, "admin", PASSWORDS["admin"])
    return broker_factory(listeners=[SASL_LISTENER], auto_create_topics=False)


def conf(user: str) -> dict[str, Any]:
    return confluent_conf(MECHANISM, user, PASSWORDS[user])


def admin(running: Any, user: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": sasl_bootstrap(running), **conf(user)})


def create(running: Any, user: str, topic: str) -> None:
    client = admin(running, user)  # kept while the future runs: a dropped client cancels it
    client.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)


def topics_seen(running: Any, user: str) -> set[str]:
    return set(admin(running, user).list_topics(timeout=20).topics)


def values(running: Any, user: str, topic: str, group: str | None = None) -> list[bytes]:
    """Every record of partition 0, read by the user (and committed for the group, when given)."""
    consumer = Consumer(
        {
            "bootstrap.servers": sasl_bootstrap(running),
            "group.id": group or "reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            **conf(user),
        }
    )
    consumer.assign([TopicPartition(topic, 0, -2)])
    out: list[bytes] = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, "no end of partition within 10 s"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                break
            out.append(msg.value())
        if group:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return out


def test_two_tenants_each_have_their_own_orders(tenant_broker: Any, redis_server: Any, keyspace: str) -> None:
    bootstrap = sasl_bootstrap(tenant_broker)
    create(tenant_broker, "alice", "orders")
    create(tenant_broker, "bob", "orders")  # the same name: no TOPIC_ALREADY_EXISTS
    create(tenant_broker, "alice", "alice-only")
    confluent_produce(
        bootstrap, "orders", [Rec(b"k", b"a-1"), Rec(b"k", b"a-2"), Rec(b"k", b"a-3")], **conf("alice")
    )
    kafka_python_produce(
        bootstrap, "orders", [Rec(b"k", b"b-1")], **python_conf(MECHANISM, "bob", "bob-secret")
    )
    done = kcat_sasl(
        bootstrap, MECHANISM, "bob", PASSWORDS["bob"], "-P", "-t", "orders", "-p", "0", stdin=b"b-2\n"
    )
    assert done.returncode == 0, done.stderr

    assert values(tenant_broker, "alice", "orders") == [b"a-1", b"a-2", b"a-3"]
    assert values(tenant_broker, "bob", "orders") == [b"b-1", b"b-2"]
    read = kcat_sasl(
        bootstrap, MECHANISM, "bob", PASSWORDS["bob"], "-C", "-t", "orders", "-e", "-q", "-f", "%s\n"
    )
    assert read.stdout.decode().split() == ["b-1", "b-2"]
    bob_reads = aiokafka_consume(bootstrap, "orders", 2, **python_conf(MECHANISM, "bob", "bob-secret"))
    assert [r.value for r in bob_reads] == [b"b-1", b"b-2"]

    # Listing: each tenant sees its own topics, the deployment's users see neither tenant's.
    assert {"orders", "alice-only"} <= topics_seen(tenant_broker, "alice")
    assert "alice-only" not in topics_seen(tenant_broker, "bob")
    assert not {"orders", "alice-only"} & topics_seen(tenant_broker, "admin")
    # Naming the other tenant's topic finds nothing, for reading and for writing.
    metadata = admin(tenant_broker, "bob").list_topics("alice-only", timeout=20).topics["alice-only"]
    assert metadata.error is not None and metadata.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    # librdkafka holds a record for a topic it does not know for topic.metadata.propagation.max.ms
    # (30 s by default) before it fails it: a second is enough here.
    write = kcat_sasl(
        bootstrap, MECHANISM, "bob", PASSWORDS["bob"], "-X", "topic.metadata.propagation.max.ms=1000",
        "-P", "-t", "alice-only", "-p", "0", stdin=b"x\n",
    )  # fmt: skip
    assert write.returncode != 0 and b"Unknown topic or partition" in write.stderr, write.stderr
    assert values(tenant_broker, "alice", "alice-only") == []

    # In Redis: one stream per tenant, under its own prefix; none in the deployment's keyspace.
    ks = Keyspace(keyspace)
    client = redis_for(redis_server.url)  # a cluster client under make test-cluster
    try:
        assert client.xlen(ks.tenant("a").stream("orders", 0)) == 3
        assert client.xlen(ks.tenant("b").stream("orders", 0)) == 2
        assert not client.exists(ks.stream("orders", 0))
    finally:
        client.close()


def test_a_group_of_the_same_name_is_each_tenants_own(tenant_broker: Any) -> None:
    bootstrap = sasl_bootstrap(tenant_broker)
    for user, records in (("alice", [b"a-1", b"a-2", b"a-3"]), ("bob", [b"b-1"])):
        create(tenant_broker, user, "orders")
        confluent_produce(bootstrap, "orders", [Rec(None, v) for v in records], **conf(user))
        assert values(tenant_broker, user, "orders", group="g") == records

    for user, committed in (("alice", 3), ("bob", 1)):
        client = admin(tenant_broker, user)
        (listed,) = client.list_consumer_group_offsets(
            [_group_request("g", TopicPartition("orders", 0))]
        ).values()
        offsets = listed.result(20).topic_partitions
        assert [(tp.topic, tp.offset) for tp in offsets] == [("orders", committed)]
        groups = client.list_consumer_groups().result(60).valid
        assert [g.group_id for g in groups] == ["g"]
    assert "g" not in [
        g.group_id for g in admin(tenant_broker, "admin").list_consumer_groups().result(60).valid
    ]


def _group_request(group: str, tp: TopicPartition) -> Any:
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(group, [tp])
