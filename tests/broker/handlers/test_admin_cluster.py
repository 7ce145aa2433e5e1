"""The cluster admin APIs of schooner/broker/handlers/admin_cluster.py on one broker: log dirs, leader
elections, partition reassignments and features, through kafka-python's KafkaAdminClient and
confluent-kafka's AdminClient, and as raw requests (tests/wire.py) for what neither client sends."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import kafka.errors as Errors
import pytest
import redis
from confluent_kafka import ElectionType, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KTopicPartition
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type
from schooner.protocol.messages import make, sibling
from schooner.storage.redis.embedded import EmbeddedRedis
from tests import wire

T = 5  # seconds for any one client call
LOG_DIRS, MOVE_DIRS = ApiKey.DESCRIBE_LOG_DIRS, ApiKey.ALTER_REPLICA_LOG_DIRS
ELECT, REASSIGN, LIST = (
    ApiKey.ELECT_LEADERS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
)
FEATURES = ApiKey.UPDATE_FEATURES
TIMEOUT = datetime.timedelta(seconds=T)


def _name() -> str:
    return f"cl-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def kadmin(broker: Any) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=T * 1000)
    yield client
    client.close()


@pytest.fixture
def admin(broker: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})


def _produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> list[int]:
    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "linger.ms": 0})
    for i in range(count):
        value = b"%04d" % i + b"x" * 96
        producer.produce(
            topic, value, partition=partition, on_delivery=lambda e, m: offsets.append(m.offset())
        )
        producer.flush(T)  # one batch per record, so DeleteRecords can remove some of them
    assert len(offsets) == count
    return offsets


def _versions(api: ApiKey) -> range:
    low, high = SUPPORTED_VERSIONS[api]
    return range(low, high + 1)


def _request(api: ApiKey, v: int, **values: Any) -> Any:
    return make(request_type(api, v), **values)


def _part(api: ApiKey, v: int, cls: str, **values: Any) -> Any:
    return make(sibling(request_type(api, v), cls), **values)


# -- DescribeLogDirs, AlterReplicaLogDirs ------------------------------------------------------------


def _only_log_dir(kadmin: KafkaAdminClient, wanted: Any) -> dict[str, Any]:
    (per_broker,) = kadmin.describe_log_dirs(wanted)
    (log_dir,) = per_broker["log_dirs"]
    return dict(log_dir)


def _sizes(log_dir: dict[str, Any], topic: str) -> dict[int, int]:
    (partitions,) = [t["partitions"] for t in log_dir["topics"] if t["name"] == topic]
    return {p["partition_index"]: p["partition_size"] for p in partitions}


def test_log_dir_sizes_follow_the_log(broker: Any, kadmin: KafkaAdminClient, admin: AdminClient) -> None:
    name = _name()
    kadmin.create_topics({name: {"num_partitions": 2}})
    empty = _only_log_dir(kadmin, {name: [0, 1]})
    assert (empty["error_code"], empty["log_dir"]) == (0, f"/redis/{broker.settings.keyspace}")
    assert _sizes(empty, name) == {0: 0, 1: 0}

    offsets = _produce(broker.bootstrap, name, 10)
    first = _sizes(_only_log_dir(kadmin, {name: [0, 1]}), name)
    assert first[0] >= 10 * 100 and first[1] == 0  # ten values of 100 bytes, in their batches
    _produce(broker.bootstrap, name, 10, partition=1)
    offsets += _produce(broker.bootstrap, name, 10)
    grown = _only_log_dir(kadmin, {name: [0, 1]})
    assert _sizes(grown, name) == {0: 2 * first[0], 1: first[0]}  # the same batch sizes each time
    partitions = [p for t in grown["topics"] for p in t["partitions"]]
    assert {(p["offset_lag"], p["is_future_key"]) for p in partitions} == {(0, False)}

    deleted = admin.delete_records([TopicPartition(name, 0, offsets[15])], request_timeout=T)
    next(iter(deleted.values())).result(T)
    left = _sizes(_only_log_dir(kadmin, {name: [0, 1]}), name)
    assert left == {0: first[0] // 2, 1: first[0]}  # 5 of the 20 records are left

    only = _only_log_dir(kadmin, {name: [1, 7], "no-such-topic": [0]})
    assert [t["name"] for t in only["topics"]] == [name] and _sizes(only, name) == {1: first[0]}


@pytest.mark.single_redis  # sets maxmemory on the one server
def test_log_dir_totals_are_redis_memory(
    broker: Any, kadmin: KafkaAdminClient, redis_client: redis.Redis
) -> None:
    info = redis_client.info("memory")
    unlimited = _only_log_dir(kadmin, {})
    assert unlimited["total_bytes"] == info["total_system_memory"] > 0
    assert 0 < unlimited["usable_bytes"] < unlimited["total_bytes"]
    old = redis_client.config_get("maxmemory")["maxmemory"]
    redis_client.config_set("maxmemory", 1 << 30)
    try:
        limited = _only_log_dir(kadmin, {})
    finally:
        redis_client.config_set("maxmemory", old)
    assert limited["total_bytes"] == 1 << 30
    assert 1 << 29 < limited["usable_bytes"] < 1 << 30  # the test server holds far less than 512 MiB


def test_log_dirs_of_every_version_and_all_topics(broker: Any, kadmin: KafkaAdminClient) -> None:
    name = _name()
    kadmin.create_topics({name: {"num_partitions": 3}})
    _produce(broker.bootstrap, name, 2, partition=2)
    for v in _versions(LOG_DIRS):
        (result,) = wire.call(broker.port, _request(LOG_DIRS, v, topics=None)).results
        (topic,) = [t for t in result.topics if t.name == name]  # null asks for every topic
        assert [p.partition_index for p in topic.partitions] == [0, 1, 2]
        assert topic.partitions[2].partition_size > 200 and topic.partitions[0].partition_size == 0
        assert v < 4 or result.total_bytes > 0
    here = f"/redis/{broker.settings.keyspace}"
    for v in _versions(MOVE_DIRS):
        assert _move(broker.port, v, here, name, 0, 2) == [ErrorCode.none] * 2
        assert _move(broker.port, v, "/var/lib/kafka", name, 0) == [ErrorCode.log_dir_not_found]
        assert _move(broker.port, v, here, name, 3) == [ErrorCode.unknown_topic_or_partition]
        assert _move(broker.port, v, here, _name(), 0) == [ErrorCode.unknown_topic_or_partition]


def _move(port: int, v: int, path: str, topic: str, *partitions: int) -> list[int]:
    """AlterReplicaLogDirs of partitions of one topic into `path`: their error codes."""
    entry = _part(MOVE_DIRS, v, "AlterReplicaLogDirTopic", name=topic, partitions=partitions)
    target = _part(MOVE_DIRS, v, "AlterReplicaLogDir", path=path, topics=(entry,))
    (result,) = wire.call(port, _request(MOVE_DIRS, v, dirs=(target,))).results
    return [p.error_code for p in result.partitions]


def test_alter_replica_log_dirs_through_kafka_python(broker: Any, kadmin: KafkaAdminClient) -> None:
    name, me = _name(), broker.broker_id
    kadmin.create_topics({name: {"num_partitions": 1}})
    here = f"/redis/{broker.settings.keyspace}"
    moved = kadmin.alter_replica_log_dirs({(name, 0, me): here})
    assert list(moved.values()) == [Errors.NoError]
    elsewhere = kadmin.alter_replica_log_dirs({(name, 0, me): "/data/kafka-logs"})
    assert list(elsewhere.values()) == [Errors.LogDirNotFoundError]
    unknown = kadmin.alter_replica_log_dirs({(name, 4, me): here})
    assert list(unknown.values()) == [Errors.UnknownTopicOrPartitionError]


# -- ElectLeaders ------------------------------------------------------------------------------------


def test_elections_are_never_needed(broker: Any, kadmin: KafkaAdminClient, admin: AdminClient) -> None:
    name = _name()
    kadmin.create_topics({name: {"num_partitions": 2}})
    for election in (0, 1):
        response = kadmin.elect_leaders(election, {name: [0, 1, 5]}, raise_errors=False)
        (result,) = response.replica_election_results
        codes = [(p.partition_id, p.error_code) for p in result.partition_result]
        not_needed = ErrorCode.election_not_needed
        assert codes == [(0, not_needed), (1, not_needed), (5, ErrorCode.unknown_topic_or_partition)]

    wanted = [TopicPartition(name, 1), TopicPartition(_name(), 0)]
    by_partition = admin.elect_leaders(ElectionType.PREFERRED, wanted).result(T)
    codes = {(tp.topic, tp.partition): error.code() for tp, error in by_partition.items()}
    assert codes == {
        (name, 1): KafkaError.ELECTION_NOT_NEEDED,
        (wanted[1].topic, 0): KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
    # No partition list (sent as null): as Kafka, only partitions an election changed are listed.
    assert admin.elect_leaders(ElectionType.UNCLEAN, None).result(T) == {}

    for v in _versions(ELECT):
        types = dict(election_type=0) if v >= 1 else {}
        every = wire.call(broker.port, _request(ELECT, v, topic_partitions=None, timeout=TIMEOUT, **types))
        (mine,) = [r for r in every.replica_election_results if r.topic == name]
        assert mine.partition_result == ()
        named = (_part(ELECT, v, "TopicPartitions", topic=name, partitions=(1, 1, 0)),)
        one = wire.call(broker.port, _request(ELECT, v, topic_partitions=named, timeout=TIMEOUT, **types))
        assert [p.partition_id for p in one.replica_election_results[0].partition_result] == [1, 0]
        if v >= 1:
            odd = wire.call(
                broker.port, _request(ELECT, v, topic_partitions=named, timeout=TIMEOUT, election_type=5)
            )
            assert odd.error_code == ErrorCode.invalid_request


# -- AlterPartitionReassignments, ListPartitionReassignments ------------------------------------------


def test_reassignments_to_the_one_replica(broker: Any, kadmin: KafkaAdminClient) -> None:
    name, me = _name(), broker.broker_id
    kadmin.create_topics({name: {"num_partitions": 2}})
    tp0, tp1, tp2, other = (KTopicPartition(n, p) for n, p in ((name, 0), (name, 1), (name, 2), (_name(), 0)))
    answered = kadmin.alter_partition_reassignments({tp0: [me], tp1: [me, me + 1], tp2: [me], other: [me]})
    unknown = Errors.UnknownTopicOrPartitionError
    assert answered == {
        tp0: None,
        tp1: Errors.InvalidReplicationAssignmentError,
        tp2: unknown,
        other: unknown,
    }
    dead = kadmin.alter_partition_reassignments({tp1: [me + 50]})
    assert dead == {tp1: Errors.InvalidReplicationAssignmentError}
    assert kadmin.alter_partition_reassignments({tp1: None}) == {tp1: Errors.NoReassignmentInProgressError}
    assert kadmin.list_partition_reassignments() == {}
    assert kadmin.list_partition_reassignments([tp0, tp1]) == {}

    for v in _versions(REASSIGN):
        ((code, message),) = _reassign(broker.port, v, name, (me, me + 1))
        assert code == ErrorCode.invalid_replica_assignment and "one replica" in str(message)
        assert _reassign(broker.port, v, name, (me,))[0] == (ErrorCode.none, None)
        assert _reassign(broker.port, v, name, None)[0][0] == ErrorCode.no_reassignment_in_progress
        assert "not a live broker" in str(_reassign(broker.port, v, name, (me + 9,))[0][1])
        if v >= 1:
            fixed = _reassign(broker.port, v, name, (me, me + 1), allow_replication_factor_change=False)
            assert fixed[0][0] == ErrorCode.invalid_replication_factor
    for topics in (
        None,
        (_part(LIST, 0, "ListPartitionReassignmentsTopics", name=name, partition_indexes=(0,)),),
    ):
        listed = wire.call(broker.port, _request(LIST, 0, topics=topics, timeout=TIMEOUT))
        assert (listed.error_code, listed.topics) == (ErrorCode.none, ())


def _reassign(port: int, v: int, topic: str, replicas: tuple[int, ...] | None, **values: Any) -> list[Any]:
    """AlterPartitionReassignments of partition 0 of `topic`: (error code, message)."""
    partition = _part(REASSIGN, v, "ReassignablePartition", partition_index=0, replicas=replicas)
    entry = _part(REASSIGN, v, "ReassignableTopic", name=topic, partitions=(partition,))
    response = wire.call(port, _request(REASSIGN, v, topics=(entry,), timeout=TIMEOUT, **values))
    assert response.error_code == ErrorCode.none
    return [(p.error_code, p.error_message) for p in response.responses[0].partitions]


# -- Features: ApiVersions and UpdateFeatures ----------------------------------------------------------


def test_transaction_and_share_versions_are_the_features_and_every_update_is_refused(
    broker: Any, kadmin: KafkaAdminClient
) -> None:
    for v in (3, 4):
        asked = _request(ApiKey.API_VERSIONS, v, client_software_name="t", client_software_version="1")
        versions = wire.call(broker.port, asked)
        supported = [(f.name, f.min_version, f.max_version) for f in versions.supported_features]
        finalized = [(f.name, f.min_version_level, f.max_version_level) for f in versions.finalized_features]
        # KIP-890's transactions v2 and the older ones; KIP-932's share groups on (Kafka 4.1+)
        assert supported == [("transaction.version", 0, 2), ("share.version", 0, 1)]
        assert finalized == [("transaction.version", 2, 2), ("share.version", 1, 1)]
        assert versions.finalized_features_epoch >= 0
    for validate_only in (False, True):
        with pytest.raises(Errors.InvalidUpdateVersionError, match="metadata.version"):
            kadmin.update_features({"metadata.version": 20}, validate_only=validate_only)
    assert kadmin.update_features({}) == {}

    for v in _versions(FEATURES):
        refused = _update(broker.port, v, "group.version", "kraft.version")
        if v < 2:
            assert refused.error_code == ErrorCode.none
            assert [(r.feature, r.error_code) for r in refused.results] == [
                ("group.version", ErrorCode.invalid_update_version),
                ("kraft.version", ErrorCode.invalid_update_version),
            ]
        else:  # v2 answers with the first refusal alone
            assert (
                refused.error_code == ErrorCode.invalid_update_version
                and "group.version" in refused.error_message
            )
        twice = _update(broker.port, v, "group.version", "group.version")
        assert twice.error_code == ErrorCode.invalid_request and getattr(twice, "results", ()) == ()
        if v >= 1:
            odd = _update(broker.port, v, "group.version", upgrade_type=9)
            assert ErrorCode.invalid_request in (
                odd.error_code,
                *(r.error_code for r in getattr(odd, "results", ())),
            )


def _update(port: int, v: int, *features: str, **values: Any) -> Any:
    """UpdateFeatures of `features` to level 1."""
    keys = tuple(
        _part(
            FEATURES, v, "FeatureUpdateKey", feature=f, max_version_level=1, allow_downgrade=False, **values
        )
        for f in features
    )
    return wire.call(port, _request(FEATURES, v, feature_updates=keys, timeout=TIMEOUT, validate_only=False))


# -- Redis down ------------------------------------------------------------------------------------------


def test_redis_outage_gives_retriable_errors(broker_factory: Any, tmp_path: Any) -> None:
    server = EmbeddedRedis(tmp_path / "redis", persistent=False)
    server.start()
    try:
        broker = broker_factory(redis_url=server.url)
        server.kill()
        name = _name()  # never looked up, so not in the broker's topic cache
        (log_dir,) = wire.call(broker.port, _request(LOG_DIRS, 5, topics=None)).results
        assert log_dir.error_code == ErrorCode.kafka_storage_error
        entry = _part(MOVE_DIRS, 2, "AlterReplicaLogDirTopic", name=name, partitions=(0,))
        target = _part(
            MOVE_DIRS, 2, "AlterReplicaLogDir", path=f"/redis/{broker.settings.keyspace}", topics=(entry,)
        )
        moved = wire.call(broker.port, _request(MOVE_DIRS, 2, dirs=(target,)))
        assert moved.results[0].partitions[0].error_code == ErrorCode.kafka_storage_error
        named = (_part(ELECT, 2, "TopicPartitions", topic=name, partitions=(0,)),)
        elected = wire.call(
            broker.port, _request(ELECT, 2, election_type=0, topic_partitions=named, timeout=TIMEOUT)
        )
        assert elected.error_code == ErrorCode.request_timed_out
        assert (
            elected.replica_election_results[0].partition_result[0].error_code == ErrorCode.request_timed_out
        )
        partition = _part(
            REASSIGN, 1, "ReassignablePartition", partition_index=0, replicas=(broker.broker_id,)
        )
        topic = _part(REASSIGN, 1, "ReassignableTopic", name=name, partitions=(partition,))
        reassigned = wire.call(broker.port, _request(REASSIGN, 1, topics=(topic,), timeout=TIMEOUT))
        assert reassigned.responses[0].partitions[0].error_code == ErrorCode.request_timed_out
        assert all(code.retriable for code in (ErrorCode.kafka_storage_error, ErrorCode.request_timed_out))
    finally:
        server.stop()
