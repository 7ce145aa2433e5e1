"""A Redis Cluster whose nodes require a password, used by the broker as the default user and as an ACL user
limited to its keyspace: the cluster client, the per-primary append lanes and the sharded wake-up
subscriptions all open connections of their own, and each must log in."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis
from confluent_kafka import Consumer, TopicPartition

from schooner.storage.keys import Keyspace
from schooner.storage.topic_partition import TopicPartition as Partition
from tests.broker.helpers import wait
from tests.clients import SAMPLE, confluent_consume, confluent_produce
from tests.conftest import add_acl_user, with_user

PASSWORD = "cluster-secret"


def _wakes_through_sharded_notices(broker: Any, topic: str) -> None:
    """A consumer waits at the end of partition 0; a record appended then is heard on its shard channel."""
    assert broker.broker.sharded_notices is not None
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "fetch.wait.max.ms": 5000}
    )
    consumer.assign([TopicPartition(topic, 0, len(SAMPLE))])
    stop = threading.Event()
    polling = threading.Thread(target=lambda: [consumer.poll(0.2) for _ in iter(stop.is_set, True)])
    polling.start()
    try:
        wait(lambda: Partition(topic, 0) in broker.broker.sharded_notices.subscribed, 20, "the fetch waits")
        confluent_produce(broker.bootstrap, topic, SAMPLE[:1])
        wait(lambda: broker.broker.sharded_notices.heard[Partition(topic, 0)] > 0, 20, "the notice is heard")
    finally:
        stop.set()
        polling.join(10)
        consumer.close()


@pytest.fixture
def passworded_cluster(cluster_factory: Any) -> Any:
    return cluster_factory(primaries=3, replicas=0, password=PASSWORD)


def test_broker_on_a_cluster_with_a_password_and_as_an_acl_user(
    passworded_cluster: Any, broker_factory: Any, keyspace: str
) -> None:
    node = passworded_cluster.nodes[0]
    with redis.Redis(port=node.port) as anonymous, pytest.raises(redis.AuthenticationError):
        anonymous.ping()
    as_acl_user = add_acl_user(passworded_cluster, keyspace)
    users = {"as-default": with_user(passworded_cluster.url, "default", PASSWORD), "as-acl-user": as_acl_user}
    for topic, url in users.items():
        broker = broker_factory(redis_url=url)
        confluent_produce(broker.bootstrap, topic, SAMPLE, acks="all")
        got = confluent_consume(broker.bootstrap, topic, len(SAMPLE))
        assert [m.value() for m in got] == [r.value for r in SAMPLE]
        _wakes_through_sharded_notices(broker, topic)
        broker.stop()
    user = redis.RedisCluster.from_url(as_acl_user)
    try:
        assert user.sismember(Keyspace(keyspace).topic_names, "as-acl-user")
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.set(f"not-{keyspace}:x", 1)
    finally:
        user.close()
