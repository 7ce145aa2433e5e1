"""The MQ library on a secured Redis: over TLS with a password and a client certificate, and as a Redis ACL
user of its keyspace; both on a tenant's keyspace (`<prefix>:tenant:<name>`), which the ACL user's key
pattern covers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from schooner.mq import AsyncProducer, Consumer, ConsumerConfig, OutgoingMessage, Producer
from schooner.storage.keys import Keyspace

from .conftest import create_topic, wait_until

FAST = ConsumerConfig(start="earliest", lease_ms=1500, poll_ms=10, retry_poll_ms=20)


def _round_trip(url: str, ks: Keyspace, topic_defaults: dict[str, str]) -> None:
    create_topic(url, ks, "jobs", 2, topic_defaults)
    producer = Producer(url, keyspace=ks, registry=CollectorRegistry())
    sent = producer.send_batch("jobs", [OutgoingMessage(b"v%d" % i, key=b"k%d" % i) for i in range(20)])
    producer.close()

    async def send_async() -> None:
        async_producer = AsyncProducer(url, keyspace=ks, registry=CollectorRegistry())
        await async_producer.send("jobs", b"async", key=b"a")
        await async_producer.close()

    asyncio.run(send_async())
    seen: set[bytes] = set()

    def handle(message: Any) -> None:
        seen.add(message.value)

    with Consumer(url, "jobs", "workers", handle, keyspace=ks, config=FAST, registry=CollectorRegistry()):
        wait_until(lambda: len(seen) == 21)
    assert seen == {b"v%d" % i for i in range(20)} | {b"async"} and len({s.partition for s in sent}) == 2


@pytest.mark.single_redis
def test_mq_over_tls(tls_redis: Any, keyspace: str, topic_defaults: dict[str, str]) -> None:
    _round_trip(tls_redis.url, Keyspace(keyspace).tenant("acme"), topic_defaults)


def test_mq_as_an_acl_user(acl_redis_url: str, keyspace: str, topic_defaults: dict[str, str]) -> None:
    _round_trip(acl_redis_url, Keyspace(keyspace).tenant("acme"), topic_defaults)
