"""Tenants: each sees, names and stores only its own topics, groups and transactional ids.

Requests go through the broker's own dispatcher as sessions of tenant a, tenant b and of no tenant
(tests/broker/tenant_rig.py), to the real handlers and the real Redis. The end-to-end test with clients
that authenticate as tenants' users comes with SASL.
"""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from prometheus_client import CollectorRegistry

from schooner.broker.net.session import Session
from schooner.mq import Producer
from schooner.protocol.apis import ApiKey
from schooner.protocol.messages import decode_request
from schooner.protocol.records import read_batches
from schooner.storage.keys import Keyspace
from schooner.storage.security.users import User, encode_user
from tests.broker.helpers import wait
from tests.broker.tenant_rig import (
    LISTENER,
    body,
    commit,
    committed,
    create_topic,
    fetch,
    group_ids,
    init_producer_id,
    metadata,
    produce,
    producer_ids,
    scope,
    serve,
    transactional_ids,
)
from tests.conftest import redis_for
from tests.wire import encode_request, idempotent_batch, produce_request


def _values(partition: Any) -> list[bytes]:
    return [r.value for b in read_batches(partition.records or b"") for r in b.records]


def test_two_tenants_each_have_a_topic_orders_and_see_only_their_own(broker, keyspace: str) -> None:
    assert create_topic(broker, "a", "orders", 2) == ErrorCode.none
    assert create_topic(broker, "b", "orders", 1) == ErrorCode.none
    a, b = metadata(broker, "a")["orders"], metadata(broker, "b")["orders"]
    assert (len(a.partitions), len(b.partitions)) == (2, 1) and a.topic_id != b.topic_id
    assert "orders" not in metadata(broker, None)  # the deployment's own keyspace has no such topic

    assert produce(broker, "a", "orders", [b"a1", b"a2", b"a3"]).error_code == ErrorCode.none
    assert _values(fetch(broker, "a", "orders")) == [b"a1", b"a2", b"a3"]
    from_b = fetch(broker, "b", "orders")
    assert from_b.error_code == ErrorCode.none and from_b.high_watermark == 0 and _values(from_b) == []
    assert produce(broker, "b", "orders", [b"b1"]).base_offset == 0  # b's log starts at its own 0

    # What the tenants stored sits under their own prefixes, and nothing under the deployment's.
    ks = Keyspace(keyspace)
    client = redis_for(broker.redis_url)
    try:
        assert client.xlen(ks.tenant("a").stream("orders", 0)) == 3
        assert client.xlen(ks.tenant("b").stream("orders", 0)) == 1
        assert not client.exists(ks.stream("orders", 0)) and not client.sismember(ks.topic_names, "orders")
    finally:
        client.close()


def test_a_tenant_cannot_reach_another_tenants_topic_by_name(broker) -> None:
    assert create_topic(broker, "a", "secret", 1) == ErrorCode.none
    assert produce(broker, "a", "secret", [b"x"]).error_code == ErrorCode.none
    # b asks by name without auto-creation: for b there is no such topic.
    assert metadata(broker, "b", "secret")["secret"].error_code == ErrorCode.unknown_topic_or_partition
    assert fetch(broker, "b", "secret").error_code == ErrorCode.unknown_topic_or_partition
    assert "secret" not in metadata(broker, "b") and "secret" not in metadata(broker, None)
    # A produce of b names b's topic: auto-created in b's keyspace, a's log is untouched.
    produce(broker, "b", "secret", [b"from b"])
    assert _values(fetch(broker, "a", "secret")) == [b"x"]


def test_groups_and_their_offsets_are_the_tenants_own(broker) -> None:
    for tenant in ("a", "b"):
        assert create_topic(broker, tenant, "orders", 1) == ErrorCode.none
    assert commit(broker, "a", "billing", "orders", 7) == ErrorCode.none
    assert group_ids(broker, "a") == {"billing"}
    assert group_ids(broker, "b") == set() and group_ids(broker, None) == set()
    assert committed(broker, "a", "billing", "orders") == 7
    assert committed(broker, "b", "billing", "orders") == -1
    assert commit(broker, "b", "billing", "orders", 2) == ErrorCode.none  # b's own group of that name
    assert (committed(broker, "a", "billing", "orders"), committed(broker, "b", "billing", "orders")) == (
        7,
        2,
    )


def test_transactional_ids_and_producers_are_the_tenants_own(broker) -> None:
    assert create_topic(broker, "a", "orders", 1) == ErrorCode.none
    assert create_topic(broker, "b", "orders", 1) == ErrorCode.none
    assert init_producer_id(broker, "a", "writer").error_code == ErrorCode.none
    assert transactional_ids(broker, "a") == {"writer"}
    assert transactional_ids(broker, "b") == set() and transactional_ids(broker, None) == set()

    idempotent = init_producer_id(broker, "a", None)
    assert idempotent.error_code == ErrorCode.none
    batch = idempotent_batch([b"v"], idempotent.producer_id, idempotent.producer_epoch, 0)
    answer = serve(broker, "a", produce_request("orders", batch))
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none
    assert producer_ids(broker, "a", "orders") == (ErrorCode.none, {idempotent.producer_id})
    assert producer_ids(broker, "b", "orders") == (ErrorCode.none, set())


def test_cluster_facts_are_shared_and_brokers_register_once(broker, keyspace: str) -> None:
    def cluster(tenant: str | None) -> tuple[str, set[int]]:
        response = serve(
            broker, tenant, body(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False)
        )
        return response.cluster_id, {b.broker_id for b in response.brokers}

    assert cluster("a") == cluster(None) == (broker.broker.ctx.cluster_id, {broker.broker_id})
    ks = Keyspace(keyspace)
    client = redis_for(broker.redis_url)
    try:
        assert client.zcard(ks.brokers) == 1 and not client.exists(ks.tenant("a").brokers)
    finally:
        client.close()


def test_a_new_tenants_session_starts_its_duties(broker, keyspace: str) -> None:
    """Its topic notices and fetch wake-ups are subscribed to on the tenant's own channels at once."""
    assert "fresh" not in broker.broker.upkeeps
    metadata(broker, "fresh")
    upkeep = broker.broker.upkeeps["fresh"]
    assert upkeep.ctx.tenant == "fresh" and all(not t.done() for t in upkeep.tasks)
    wait(lambda: upkeep.ctx.topics.hears_notices, 10, "the tenant's topic notices are subscribed")
    if upkeep.sharded_notices is not None:  # a Redis Cluster: its own sharded subscriptions
        assert upkeep.sharded_notices is not broker.broker.sharded_notices
        return
    channel = Keyspace(keyspace).tenant("fresh").appended_channel
    client = redis_for(broker.redis_url)
    try:
        wait(lambda: client.pubsub_numsub(channel) == [(channel.encode(), 1)], 10, "wake-ups subscribed")
    finally:
        client.close()


def test_retention_runs_for_a_tenants_topics(broker_factory) -> None:
    broker = broker_factory(log_retention_check_interval_ms=200)
    assert create_topic(broker, "a", "short", 1, **{"retention.ms": "1000"}) == ErrorCode.none
    produce(broker, "a", "short", [b"old"])
    # A fetch from the end sees the log start (one from 0 would be out of range once trimmed).
    wait(lambda: fetch(broker, "a", "short", 1).log_start_offset == 1, 30, "the sweep trims the tenant's log")


def test_tenants_are_found_in_storage_at_start_and_later(broker_factory, redis_server, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    client = redis_for(redis_server.url)
    try:
        client.hset(ks.users, "alice", encode_user(User("alice", tenant="acme")))
        client.hset(ks.users, "eve", encode_user(User("eve", tenant="no:such")))  # stored by hand: ignored
        broker = broker_factory()
        assert set(broker.broker.upkeeps) == {None, "acme"}
        client.hset(ks.users, "bob", encode_user(User("bob", tenant="globex")))
        wait(lambda: "globex" in broker.broker.upkeeps, 20, "the refresh finds the new tenant")
    finally:
        client.close()


def test_a_session_with_an_impossible_tenant_is_not_served(broker) -> None:
    request = body(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                   include_topic_authorized_operations=False)  # fmt: skip
    decoded = decode_request(encode_request(request)[4:])

    async def as_session() -> Any:
        session = Session(LISTENER, "127.0.0.1", principal="User:x", tenant="no:colons")
        return await broker.broker.dispatch(decoded, scope(session))

    with pytest.raises(ValueError, match="tenant name"):
        broker.call(as_session())
    assert "no:colons" not in broker.broker.upkeeps


def test_the_mq_library_on_a_tenants_keyspace_meets_the_tenants_kafka_clients(broker, keyspace: str) -> None:
    assert create_topic(broker, "a", "jobs", 1) == ErrorCode.none
    producer = Producer(
        broker.redis_url, keyspace=Keyspace(keyspace).tenant("a"), registry=CollectorRegistry()
    )
    try:
        assert producer.send("jobs", b"from mq", partition=0).offset == 0
    finally:
        producer.close()
    assert _values(fetch(broker, "a", "jobs")) == [b"from mq"]
    assert fetch(broker, "b", "jobs").error_code == ErrorCode.unknown_topic_or_partition
