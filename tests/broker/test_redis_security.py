"""The broker on a secured Redis: TLS with a password and a client certificate (rediss://), and a Redis ACL
user limited to the broker's keyspace (docs/security.md, "Redis"). Kafka clients produce, consume and
commit as a group; the ACL user cannot reach anything outside its prefix."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from confluent_kafka import Consumer, KafkaException

from schooner.storage.keys import Keyspace
from tests.clients import SAMPLE, confluent_consume, confluent_produce
from tests.conftest import redis_for


def _group_round(bootstrap: str, topic: str, group: str, count: int) -> list[Any]:
    """Reads count records as a member of the group, commits, and reads the group's committed offset."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            got.append(msg)
        consumer.commit(asynchronous=False)
        committed = consumer.committed(consumer.assignment(), timeout=10)
    finally:
        consumer.close()
    assert [c.offset for c in committed] == [count]
    return got


def _works(bootstrap: str, topic: str) -> None:
    confluent_produce(bootstrap, topic, SAMPLE, acks="all")
    assert [m.value() for m in confluent_consume(bootstrap, topic, len(SAMPLE))] == [r.value for r in SAMPLE]
    assert len(_group_round(bootstrap, topic, "secured", len(SAMPLE))) == len(SAMPLE)


@pytest.mark.single_redis
def test_broker_on_redis_over_tls(broker_factory, tls_redis) -> None:
    """rediss:// with a password, the CA to check the server and a certificate to show it, on every
    connection the broker makes: the client's, the append lane's, the subscriptions'."""
    broker = broker_factory(redis_url=tls_redis.url)
    _works(broker.bootstrap, "over-tls")
    with redis.Redis.from_url(tls_redis.url) as check:
        # the wake-up and topic subscriptions are live over TLS too
        ks = Keyspace(broker.settings.keyspace)
        assert dict(check.pubsub_numsub(ks.appended_channel, ks.topics_channel)) == {
            ks.appended_channel.encode(): 1,
            ks.topics_channel.encode(): 1,
        }


def test_broker_as_an_acl_user_of_its_keyspace(broker_factory, acl_redis_url: str, keyspace: str) -> None:
    broker = broker_factory(redis_url=acl_redis_url)
    _works(broker.bootstrap, "as-acl-user")
    ks = Keyspace(keyspace)
    user = redis_for(acl_redis_url)
    try:
        assert user.xlen(ks.stream("as-acl-user", 0)) == len(SAMPLE)  # its own keys: yes
        elsewhere = f"not-{keyspace}:stream:{{as-acl-user:0}}"
        for attempt in (
            lambda: user.xlen(elsewhere),
            lambda: user.set(f"{keyspace}-other:x", 1),  # a prefix that only starts the same
            lambda: user.execute_command("FLUSHALL"),
            lambda: user.keys("*"),
            lambda: user.config_set("maxmemory-policy", "allkeys-lru"),
            lambda: user.publish(f"not-{keyspace}:appended", "x"),
            lambda: user.eval("return redis.call('SET', KEYS[1], 1)", 1, elsewhere),
        ):
            with pytest.raises(redis.exceptions.NoPermissionError):
                attempt()
    finally:
        user.close()
