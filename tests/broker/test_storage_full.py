"""Redis out of memory is a Redis-backed log's full disk: producers get a clear retriable error,
consumers keep reading, and producing resumes by itself once retention or a deletion frees memory.
A Redis that may evict keys would lose records silently: the broker refuses to start on one."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from schooner.broker.server import StartupRefused
from schooner.storage.keys import Keyspace
from tests.clients import Rec, confluent_consume, confluent_produce
from tests.conftest import start_broker
from tests.wire import call, produce_request

pytestmark = pytest.mark.single_redis  # it configures, fills or kills the one server

HEADROOM = 3 * 1024 * 1024
WAITED = b"w" * 64 * 1024


def _limit(client: redis.Redis) -> None:
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", str(used + HEADROOM))


def _produce(port: int, topic: str, size: int = 64 * 1024) -> Any:
    response = call(port, produce_request(topic, [bytes([i]) * (size // 16) for i in range(16)]))
    return response.responses[0].partition_responses[0]


def _below_use(client: redis.Redis) -> None:
    """Sets maxmemory under what Redis uses now. Right after a refusal, memory hovers at the limit (a
    refused request's buffer comes and goes) and a batch may fit again; below it, only memory that
    retention or a deletion frees lets writes in."""
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", str(used - HEADROOM // 6))


def _fill(port: int, topic: str) -> Any:
    """Produces until Redis refuses; returns the refusal."""
    for _ in range(400):  # 25 MB at most: far beyond the headroom
        answer = _produce(port, topic)
        if answer.error_code != ErrorCode.none:
            return answer
    raise AssertionError("Redis never refused a write")


def _assert_still_full(port: int, topic: str) -> None:
    # Small writes may still fit while memory hovers at the limit; a 64 KB batch does not.
    for _ in range(5):
        assert _produce(port, topic).error_code == ErrorCode.kafka_storage_error


def _wait_until_accepted(port: int, topic: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while (answer := _produce(port, topic)).error_code != ErrorCode.none:
        assert time.monotonic() < deadline, f"producing did not resume: {answer.error_code}"
        time.sleep(0.25)
    return answer


def test_full_redis_refuses_produce_retriably_serves_reads_and_recovers(
    broker_factory: Any, full_redis: redis.Redis, keyspace: str, caplog: pytest.LogCaptureFixture
) -> None:
    # No reserve (high-water mark 1.0): this is Redis refusing writes itself, as when other clients fill
    # it; the mark below maxmemory is tested in tests/broker/tiering/test_memory_pressure.py.
    broker = broker_factory(log_retention_check_interval_ms=300, redis_memory_high_water=1.0)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topics = [NewTopic("aging", 1, 1, config={"retention.ms": "3000"}), NewTopic("bulk", 1, 1)]
    for future in admin.create_topics(topics).values():
        future.result(10)
    kept = [Rec(b"k%d" % i, b"v%d" % i) for i in range(5)]
    confluent_produce(broker.bootstrap, "kept", kept)
    _limit(full_redis)

    first = _produce(broker.port, "aging").base_offset
    refused = _fill(broker.port, "aging")
    assert refused.error_code == ErrorCode.kafka_storage_error  # retriable: clients keep the batch
    assert "out of memory" in (refused.error_message or "")
    # The warning is logged beside the refusal, on the broker's thread: it may land just after the answer.
    deadline = time.monotonic() + 10
    while not any("Redis is out of memory" in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, "no warning that Redis is out of memory"
        time.sleep(0.05)
    _below_use(full_redis)
    _assert_still_full(broker.port, "aging")
    full_at = time.monotonic()
    got = confluent_consume(broker.bootstrap, "kept", len(kept))
    assert [(m.key(), m.value()) for m in got] == [(r.key, r.value) for r in kept]

    # A Kafka client producing meanwhile is not failed: its batch goes in once memory frees up.
    delivered: list[Any] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 60000})
    producer.produce("kept", value=WAITED, partition=0, on_delivery=lambda e, m: delivered.append(e or m))
    flushing = threading.Thread(target=producer.flush, args=(60,))
    flushing.start()

    accepted = _wait_until_accepted(broker.port, "aging")
    # The retention sweep trims the old records. Memory freed otherwise on the shared server (an earlier
    # test's keys, freed lazily) may let a write in a moment before it: then the sweep follows.
    deadline = time.monotonic() + 15
    while accepted.log_start_offset <= first:
        assert time.monotonic() < deadline, "the retention sweep did not trim the old records"
        time.sleep(0.25)
        accepted = _wait_until_accepted(broker.port, "aging")
    print(f"storage full: producing resumed {time.monotonic() - full_at:.1f} s after (retention 3 s)")
    flushing.join(60)
    assert len(delivered) == 1 and delivered[0].error() is None, delivered

    # Full again, now with records no retention will remove: deleting a topic frees the memory.
    # Retention would free memory meanwhile: wait until it has emptied "aging" (XTRIM frees at once,
    # where a deleted topic's keys are freed lazily, in the background).
    aging = Keyspace(keyspace).stream("aging", 0)
    deadline = time.monotonic() + 30
    while full_redis.xlen(aging) > 0:
        assert time.monotonic() < deadline, "retention did not empty the topic"
        time.sleep(0.2)
    refused = _fill(broker.port, "bulk")
    assert refused.error_code == ErrorCode.kafka_storage_error
    admin.delete_topics(["bulk", "aging"])["bulk"].result(10)
    _wait_until_accepted(broker.port, "kept")
    # Half the headroom fits again, which it could not had the deletion freed nothing. (Between its
    # polls of Redis the broker counts what it appended itself, not what Redis frees in the background
    # meanwhile, so a batch may wait for the next poll.)
    for _ in range(HEADROOM // 2 // (64 * 1024)):
        _wait_until_accepted(broker.port, "kept")
    got = confluent_consume(broker.bootstrap, "kept", len(kept) + 1)
    assert got[len(kept)].value() == WAITED


def test_broker_refuses_a_redis_that_may_evict_unless_allowed(
    redis_server: Any, full_redis: redis.Redis, keyspace: str
) -> None:
    full_redis.config_set("maxmemory-policy", "allkeys-lru")
    with pytest.raises(StartupRefused, match="allkeys-lru.*allow_evicting_redis"):
        start_broker(redis_server.url, keyspace)
    allowed = start_broker(redis_server.url, keyspace, allow_evicting_redis=True)
    try:
        confluent_produce(allowed.bootstrap, "evictable", [Rec(None, b"served")])
    finally:
        allowed.stop()
