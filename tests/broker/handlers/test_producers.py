"""DescribeProducers and the expiry of idle idempotent producers (producer_id_expiration_ms), with real
clients and over the raw wire."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import UnknownTopicOrPartitionError
from kio.schema.describe_producers.v0.request import DescribeProducersRequest, TopicRequest
from kio.schema.errors import ErrorCode

from schooner.storage.keys import Keyspace
from tests import wire
from tests.broker.helpers import wait


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def _idempotent(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})


def _send(producer: Producer, topic: str, count: int, partition: int = 0) -> None:
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i, partition=partition)
    assert producer.flush(15) == 0


def _described(admin: KafkaAdminClient, topic: str, partition: int = 0) -> dict[int, Any]:
    """The partition's active producers by id, as kafka-python's describe_producers returns them."""
    states = admin.describe_producers([TopicPartition(topic, partition)])
    return {p.producer_id: p for p in states[TopicPartition(topic, partition)].active_producers}


def _last_producer_id(client: redis.Redis, ks: Keyspace) -> int:
    """The id the broker handed out last (its counter), so a test knows which id a client got."""
    return int(client.get(ks.producer_id_counter) or -1)


def test_describe_producers_lists_an_idempotent_producer(broker, redis_client) -> None:
    ks = Keyspace(broker.settings.keyspace)
    _create(broker.bootstrap, "described", partitions=2)
    producer = _idempotent(broker.bootstrap)
    before = int(time.time() * 1000)
    _send(producer, "described", 7)
    after = int(time.time() * 1000)
    pid = _last_producer_id(redis_client, ks)
    assert pid >= 0
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (state,) = _described(admin, "described").values()
        assert (state.producer_id, state.producer_epoch, state.last_sequence) == (pid, 0, 6)
        assert before - 1000 <= state.last_timestamp <= after + 1000
        assert (state.coordinator_epoch, state.current_transaction_start_offset) == (-1, -1)
        assert _described(admin, "described", 1) == {}  # the other partition got nothing
        _send(producer, "described", 3)
        assert _described(admin, "described")[pid].last_sequence == 9
    finally:
        admin.close()
        producer.flush(5)


def test_describe_producers_of_an_unknown_topic_or_partition(broker) -> None:
    _create(broker.bootstrap, "known")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        for tp in (TopicPartition("nosuch", 0), TopicPartition("known", 1)):
            with pytest.raises(UnknownTopicOrPartitionError):
                admin.describe_producers([tp], broker_id=broker.broker_id)
    finally:
        admin.close()
    # One request with all three: each partition gets its own answer.
    response = wire.call(
        broker.port,
        DescribeProducersRequest(
            topics=(
                TopicRequest(name="nosuch", partition_indexes=(0,)),
                TopicRequest(name="known", partition_indexes=(0, 3)),
            )
        ),
    )
    codes = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
    assert codes == {
        ("nosuch", 0): ErrorCode.unknown_topic_or_partition,
        ("known", 0): ErrorCode.none,
        ("known", 3): ErrorCode.unknown_topic_or_partition,
    }


def test_expiration_is_a_broker_config(broker_factory) -> None:
    broker = broker_factory(producer_id_expiration_ms=123_000)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.BROKER, str(broker.broker_id))
    configs = admin.describe_configs([resource])[resource].result(10)
    entry = configs["producer.id.expiration.ms"]
    assert entry.value == "123000" and entry.is_read_only and not entry.is_default


def test_idle_producers_expire_and_an_active_one_stays(broker_factory, redis_client) -> None:
    broker = broker_factory(producer_id_expiration_ms=1000, retention_check_ms=200)
    ks = Keyspace(broker.settings.keyspace)
    _create(broker.bootstrap, "expiring")
    idle = _idempotent(broker.bootstrap)
    _send(idle, "expiring", 3)
    idle_pid = _last_producer_id(redis_client, ks)
    active = _idempotent(broker.bootstrap)
    _send(active, "expiring", 1)
    active_pid = _last_producer_id(redis_client, ks)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    state, producers = ks.partition_state("expiring", 0), ks.producers("expiring", 0)
    try:
        assert set(_described(admin, "expiring")) == {idle_pid, active_pid}
        assert redis_client.hexists(state, f"producer:{idle_pid}")
        # The active producer appends every 0.2 s for 2.5 expiration periods; the idle one does not.
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            _send(active, "expiring", 1)
            time.sleep(0.2)
        assert set(_described(admin, "expiring")) == {active_pid}
        assert not redis_client.hexists(state, f"producer:{idle_pid}")
        assert redis_client.hexists(state, f"producer:{active_pid}")
        assert [int(m) for m in redis_client.zrange(producers, 0, -1)] == [active_pid]
        # Once the active one stops too, the partition forgets every producer, and the set goes.
        wait(lambda: not redis_client.exists(producers), 5, "the last producer did not expire")
        assert _described(admin, "expiring") == {}
        fields = redis_client.hkeys(state)
        assert not [f for f in fields if f.startswith(b"producer:")]
        # A forgotten producer that comes back is taken as new, from the sequence it is at.
        _send(idle, "expiring", 2)
        assert _described(admin, "expiring")[idle_pid].last_sequence == 4
    finally:
        admin.close()
        idle.flush(5)
        active.flush(5)


PRODUCERS = 5000
WINDOW = 50  # requests in flight on the one connection
EXPIRATION_MS = 12000  # long enough to make all 5000 before the first expires, on a busy machine too (6 s
# was not: 6.1 to 7.8 s on a slow day)
WARM_UP = 200  # producers of the first round: more than a compact hash holds (128), as in the big one


def _one_message_producers(sock: Any, topic: str, count: int) -> None:
    """`count` producers, each InitProducerId then one Produce of one record at sequence 0."""
    for start in range(0, count, WINDOW):
        n = min(WINDOW, count - start)
        ids = wire.exchange(sock, [wire.init_producer_id_request() for _ in range(n)])
        assert {r.error_code for r in ids} == {ErrorCode.none}
        produced = wire.exchange(
            sock,
            [
                wire.produce_request(topic, wire.idempotent_batch([b"x"], r.producer_id, r.producer_epoch, 0))
                for r in ids
            ],
        )
        codes = {p.error_code for r in produced for t in r.responses for p in t.partition_responses}
        assert codes == {ErrorCode.none}


def _used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def _settled_memory(client: redis.Redis) -> int:
    """used_memory once Redis has freed the query buffers of the burst (it does so within ~2 s) and
    the scripts' Lua heap holds no garbage (which Lua otherwise frees at its own pace)."""
    time.sleep(2.5)
    client.eval("collectgarbage('collect') return 0", 0)
    return _used_memory(client)


def _keys_memory(client: redis.Redis, ks: Keyspace, topic: str) -> int:
    return sum(client.memory_usage(k, samples=0) or 0 for k in ks.partition_keys(topic, 0))


def _cycle(sock: Any, client: redis.Redis, ks: Keyspace, port: int, count: int) -> tuple[float, int, int]:
    """`count` producers come and go. Returns the seconds taken to make them, used_memory with them
    (and their records), and the bytes of their state (MEMORY USAGE of the state hash and the set)."""
    started = time.monotonic()
    _one_message_producers(sock, "many", count)
    took = time.monotonic() - started
    assert took < EXPIRATION_MS / 1000, "too slow to have them all at once"
    producers, state = ks.producers("many", 0), ks.partition_state("many", 0)
    assert client.zcard(producers) == count  # none expired yet: this is the peak
    peak = _used_memory(client)
    state_bytes = sum(client.memory_usage(k, samples=0) for k in (producers, state))
    # The records go too, so that what is left to reclaim is the producer state.
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}")
    try:
        admin.delete_records({TopicPartition("many", 0): -1})
    finally:
        admin.close()
    wait(lambda: not client.exists(producers), EXPIRATION_MS / 1000 + 10, "the producers did not expire")
    assert not [f for f in client.hkeys(state) if f.startswith(b"producer:")]
    return took, peak, state_bytes


def test_memory_of_many_short_lived_producers_comes_back(broker_factory, redis_client) -> None:
    broker = broker_factory(producer_id_expiration_ms=EXPIRATION_MS, retention_check_ms=200)
    ks = Keyspace(broker.settings.keyspace)
    _create(broker.bootstrap, "many")
    with wire.connect(broker.port) as sock:
        wire.exchange(sock, [wire.produce_request("many", [b"warm-up"])])
        # A first, smaller round runs every command of the big one: Redis keeps latency statistics
        # per command (tens of KB each, from its first use), and those are not producer state.
        _cycle(sock, redis_client, ks, broker.port, WARM_UP)
        wire.exchange(sock, [wire.produce_request("many", [b"warm-up"])])
        keys_before = _keys_memory(redis_client, ks, "many")
        before = _settled_memory(redis_client)
        took, peak, state_bytes = _cycle(sock, redis_client, ks, broker.port, PRODUCERS)
    after, keys_after = _settled_memory(redis_client), _keys_memory(redis_client, ks, "many")
    print(
        f"\nRedis used_memory with {PRODUCERS} one-message idempotent producers (made in {took:.1f} s): "
        f"before {before}, peak {peak} (+{peak - before}, records and client buffers included), "
        f"after expiry {after} ({(after - before) / before:+.1%}). Their state: {state_bytes} bytes "
        f"({state_bytes // PRODUCERS} each); the partition's keys: {keys_before} -> {keys_after} bytes"
    )
    assert state_bytes > 100 * PRODUCERS  # the state was really there
    assert after <= before * 1.05
    assert keys_after <= keys_before  # the partition's keys hold nothing more than before
