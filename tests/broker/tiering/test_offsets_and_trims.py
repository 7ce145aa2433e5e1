"""ListOffsets across tiers (earliest, earliest local, latest tiered, earliest pending upload, times),
the configs Kafka refuses, and the trims that reach the cold tier: DeleteRecords and retention."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigEntry, ConfigResource
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v11.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic

from tests.broker.helpers import wait
from tests.broker.tiering.conftest import cold_offsets, create_topic, hot_state, parquet_files, tiered
from tests.clients import Rec, confluent_consume, confluent_produce
from tests.wire import call

EARLIEST, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -2, -4, -5, -6


def list_offset(port: int, topic: str, timestamp: int) -> tuple[int, int, int]:
    """(error code, offset, timestamp) of a ListOffsets v11 of partition 0."""
    partition = ListOffsetsPartition(partition_index=0, timestamp=timestamp, current_leader_epoch=-1)
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=(ListOffsetsTopic(name=topic, partitions=(partition,)),),
        timeout=__import__("datetime").timedelta(seconds=5),
    )
    answer = call(port, body).topics[0].partitions[0]
    return answer.error_code, answer.offset, answer.timestamp


def _produce_stamped(bootstrap: str, topic: str, stamps: list[int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, stamp in enumerate(stamps):
        producer.produce(topic, value=b"v%d" % i, key=b"k", timestamp=stamp)
    assert producer.flush(20) == 0


def test_list_offsets_across_tiers(tiered_broker, redis_client, keyspace) -> None:
    b = tiered_broker
    tiered("lo", b.bootstrap, local_ms="5000")
    old = int(time.time() * 1000) - 60_000
    _produce_stamped(b.bootstrap, "lo", [old + i for i in range(100)])  # offsets 0..99: leave Redis
    wait(lambda: hot_state(redis_client, keyspace, "lo")[0] == 0, 20, "old records archived and trimmed")
    fresh = int(time.time() * 1000)
    _produce_stamped(b.bootstrap, "lo", [fresh + i for i in range(10)])  # 100..109: stay in Redis 5 s
    wait(lambda: hot_state(redis_client, keyspace, "lo")[1].get("archived_end") == "110", 20, "all archived")

    assert list_offset(b.port, "lo", EARLIEST)[:2] == (ErrorCode.none, 0)  # the cold start
    assert list_offset(b.port, "lo", EARLIEST_LOCAL)[:2] == (ErrorCode.none, 100)  # the Redis start
    assert list_offset(b.port, "lo", LATEST_TIERED)[:2] == (ErrorCode.none, 109)
    assert list_offset(b.port, "lo", EARLIEST_PENDING_UPLOAD)[:2] == (ErrorCode.none, 110)
    assert list_offset(b.port, "lo", -1)[:2] == (ErrorCode.none, 110)
    # By time: the cold tier first, then Redis.
    assert list_offset(b.port, "lo", old + 42) == (ErrorCode.none, 42, old + 42)
    assert list_offset(b.port, "lo", fresh + 3) == (ErrorCode.none, 103, fresh + 3)
    assert list_offset(b.port, "lo", fresh + 60_000)[1] == -1
    # A client's offsets_for_times (confluent-kafka) finds the cold record too.
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "times"})
    try:
        (found,) = consumer.offsets_for_times([TopicPartition("lo", 0, old + 7)], timeout=10)
    finally:
        consumer.close()
    assert found.offset == 7


def test_untiered_topics_answer_the_tiered_timestamps_as_kafka(tiered_broker) -> None:
    confluent_produce(tiered_broker.bootstrap, "plain", [Rec(None, b"x")] * 3)
    assert list_offset(tiered_broker.port, "plain", EARLIEST_LOCAL)[:2] == (ErrorCode.none, 0)
    assert list_offset(tiered_broker.port, "plain", LATEST_TIERED)[:2] == (ErrorCode.none, -1)
    assert list_offset(tiered_broker.port, "plain", EARLIEST_PENDING_UPLOAD)[:2] == (ErrorCode.none, -1)


def _refused(future) -> str:
    with pytest.raises(KafkaException) as raised:
        future.result(15)
    error = raised.value.args[0]
    assert error.code() == 40, error  # INVALID_CONFIG
    return str(error.str())


def test_configs_kafka_refuses(tiered_broker) -> None:
    b = tiered_broker
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    from confluent_kafka.admin import NewTopic

    compacted = NewTopic("cmp", 1, 1, config={"cleanup.policy": "compact", "remote.storage.enable": "true"})
    assert "compact" in _refused(admin.create_topics([compacted])["cmp"])
    too_long = NewTopic("lr", 1, 1, config={"remote.storage.enable": "true", "local.retention.ms": "9000",
                                            "retention.ms": "5000"})  # fmt: skip
    _refused(admin.create_topics([too_long])["lr"])
    # Enabling on a compacted topic, compacting a tiered one, turning tiering off: refused.
    create_topic(b.bootstrap, "cmp2", **{"cleanup.policy": "compact"})
    tiered("tt", b.bootstrap)
    for name, entries in [
        ("cmp2", [ConfigEntry("remote.storage.enable", "true"), ConfigEntry("cleanup.policy", "compact")]),
        ("tt", [ConfigEntry("remote.storage.enable", "true"), ConfigEntry("cleanup.policy", "compact")]),
        ("tt", [ConfigEntry("remote.storage.enable", "false")]),
    ]:
        resource = ConfigResource("topic", name, set_config=None)
        for entry in entries:
            resource.set_config(entry.name, entry.value)
        _refused(admin.alter_configs([resource])[resource])
    # DescribeConfigs shows the broker's tiering settings with their sources.
    (described,) = admin.describe_configs([ConfigResource("broker", str(b.broker_id))]).values()
    configs = described.result(15)
    assert configs["remote.log.storage.system.enable"].value == "true"
    assert configs["archive_interval_ms"].value == "150"
    assert configs["archive_interval_ms"].source == 4  # STATIC_BROKER_CONFIG
    assert configs["archive_concurrency"].source == 5  # DEFAULT_CONFIG
    assert configs["cold_store_secret_access_key"].value is None


def test_a_broker_without_a_cold_store_refuses_remote_storage(broker) -> None:
    """As Kafka without remote log storage; an external Redis gives no cold store by default."""
    from confluent_kafka.admin import NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    new = NewTopic("nocold", 1, 1, config={"remote.storage.enable": "true"})
    assert "cold_store_url" in _refused(admin.create_topics([new])["nocold"])
    (described,) = admin.describe_configs([ConfigResource("broker", str(broker.broker_id))]).values()
    assert described.result(15)["remote.log.storage.system.enable"].value == "false"


def test_delete_records_trims_the_cold_tier(tiered_broker, redis_client, keyspace, cold_dir) -> None:
    b = tiered_broker
    tiered("dr", b.bootstrap)
    old = int(time.time() * 1000) - 60_000
    _produce_stamped(b.bootstrap, "dr", [old + i for i in range(100)])
    wait(lambda: hot_state(redis_client, keyspace, "dr")[0] == 0, 20, "archived and trimmed")
    assert cold_offsets(cold_dir, keyspace, "dr") == [(0, i) for i in range(100)]
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    (done,) = admin.delete_records([TopicPartition("dr", 0, 40)]).values()
    assert done.result(15).low_watermark == 40
    assert list_offset(b.port, "dr", EARLIEST)[:2] == (ErrorCode.none, 40)
    assert cold_offsets(cold_dir, keyspace, "dr") == [(0, i) for i in range(40, 100)]  # Delta remove
    got = confluent_consume(b.bootstrap, "dr", 60)
    assert [m.offset() for m in got] == list(range(40, 100))


def test_retention_deletes_cold_files(tiered_broker, redis_client, keyspace, cold_dir) -> None:
    b = tiered_broker
    tiered("ret", b.bootstrap, **{"retention.ms": "3000"})
    now = int(time.time() * 1000)
    _produce_stamped(b.bootstrap, "ret", [now + i for i in range(200)])
    wait(lambda: len(parquet_files(cold_dir, keyspace, "ret")) > 0, 20, "archived to parquet")
    wait(lambda: hot_state(redis_client, keyspace, "ret")[0] == 0, 20, "Redis trimmed")
    # After retention.ms, the records leave the cold tier too, files and all (vacuum).
    wait(lambda: not parquet_files(cold_dir, keyspace, "ret"), 20, "cold files deleted")
    assert cold_offsets(cold_dir, keyspace, "ret") == []
    assert "cold_start" not in hot_state(redis_client, keyspace, "ret")[1]
    assert list_offset(b.port, "ret", EARLIEST)[:2] == (ErrorCode.none, 200)


def test_deleting_a_tiered_topic_removes_its_cold_table(
    tiered_broker, redis_client, keyspace, cold_dir
) -> None:
    b = tiered_broker
    tiered("gone", b.bootstrap)
    tiered("kept", b.bootstrap)
    for name in ("gone", "kept"):
        confluent_produce(b.bootstrap, name, [Rec(None, b"v%d" % i) for i in range(50)])
        wait(lambda name=name: len(parquet_files(cold_dir, keyspace, name)) > 0, 20, "archived to parquet")
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.delete_topics(["gone"])["gone"].result(15)
    assert not (cold_dir / keyspace / "gone").exists() or not any((cold_dir / keyspace / "gone").iterdir())
    assert cold_offsets(cold_dir, keyspace, "kept") == [(0, i) for i in range(50)]  # the other stays
