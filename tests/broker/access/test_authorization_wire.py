"""ACL enforcement of the APIs whose exact error placement matters, over raw kio requests: each request is
sent once without ACLs (the denial code lands where Kafka puts it) and once with the grant it needs.

The principal is User:ANONYMOUS (a PLAINTEXT connection; tests/broker/acl_rig.py).
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey
from schooner.security.acls import operations_bits
from tests.broker.acl_rig import (
    CLUSTER,
    CLUSTER_DENIED,
    GROUP,
    GROUP_DENIED,
    OK,
    TOPIC,
    TOPIC_DENIED,
    TXN,
    TXN_DENIED,
    Case,
    Op,
    Secured,
    coordinators,
    grant,
    nested,
    partitions_of,
    request,
    secure,
    top,
)
from tests.wire import call, record_batch

SECOND = datetime.timedelta(seconds=1)


def _list_offsets() -> Any:
    part = nested(ApiKey.LIST_OFFSETS, 7, "ListOffsetsPartition", partition_index=0, timestamp=-1)
    t = nested(ApiKey.LIST_OFFSETS, 7, "ListOffsetsTopic", name="w", partitions=(part,))
    return request(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=(t,))


def _epochs() -> Any:
    part = nested(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, "OffsetForLeaderPartition", partition=0, leader_epoch=0)
    t = nested(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, "OffsetForLeaderTopic", topic="w", partitions=(part,))
    return request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, topics=(t,))


def _delete_records() -> Any:
    part = nested(ApiKey.DELETE_RECORDS, 2, "DeleteRecordsPartition", partition_index=0, offset=0)
    t = nested(ApiKey.DELETE_RECORDS, 2, "DeleteRecordsTopic", name="w", partitions=(part,))
    return request(ApiKey.DELETE_RECORDS, 2, topics=(t,), timeout=SECOND)


def _describe_producers() -> Any:
    t = nested(ApiKey.DESCRIBE_PRODUCERS, 0, "TopicRequest", name="w", partition_indexes=(0,))
    return request(ApiKey.DESCRIBE_PRODUCERS, 0, topics=(t,))


def _elect() -> Any:
    t = nested(ApiKey.ELECT_LEADERS, 2, "TopicPartitions", topic="w", partitions=(0,))
    return request(ApiKey.ELECT_LEADERS, 2, election_type=0, topic_partitions=(t,), timeout=SECOND)


def _reassign() -> Any:
    part = nested(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, "ReassignablePartition", partition_index=0,
                  replicas=None)  # fmt: skip
    t = nested(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, "ReassignableTopic", name="w", partitions=(part,))
    return request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, timeout=SECOND, topics=(t,))


def _log_dirs_move() -> Any:
    t = nested(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, "AlterReplicaLogDirTopic", name="w", partitions=(0,))
    d = nested(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, "AlterReplicaLogDir", path="/elsewhere", topics=(t,))
    return request(ApiKey.ALTER_REPLICA_LOG_DIRS, 2, dirs=(d,))


def _features() -> Any:
    f = nested(ApiKey.UPDATE_FEATURES, 1, "FeatureUpdateKey", feature="x", max_version_level=1)
    return request(ApiKey.UPDATE_FEATURES, 1, timeout=SECOND, feature_updates=(f,))


def _alter_quotas() -> Any:
    entity = nested(ApiKey.ALTER_CLIENT_QUOTAS, 1, "EntityData", entity_type="user", entity_name="u")
    op = nested(ApiKey.ALTER_CLIENT_QUOTAS, 1, "OpData", key="producer_byte_rate", value=10.0, remove=False)
    entry = nested(ApiKey.ALTER_CLIENT_QUOTAS, 1, "EntryData", entity=(entity,), ops=(op,))
    return request(ApiKey.ALTER_CLIENT_QUOTAS, 1, entries=(entry,), validate_only=False)


def _transactional_produce() -> Any:
    data = nested(ApiKey.PRODUCE, 9, "PartitionProduceData", index=0, records=record_batch([b"v"]))
    t = nested(ApiKey.PRODUCE, 9, "TopicProduceData", name="w", partition_data=(data,))
    return request(ApiKey.PRODUCE, 9, transactional_id="tx", acks=1, timeout=SECOND, topic_data=(t,))


CASES: dict[str, Case] = {
    "ListOffsets DESCRIBE topic": Case(_list_offsets, partitions_of("topics"), grant(TOPIC, Op.DESCRIBE),
                                       [TOPIC_DENIED], [OK]),
    "OffsetForLeaderEpoch DESCRIBE topic": Case(_epochs, partitions_of("topics"), grant(TOPIC, Op.DESCRIBE),
                                                [TOPIC_DENIED], [OK]),
    "OffsetForLeaderEpoch CLUSTER_ACTION": Case(_epochs, partitions_of("topics"),
                                                grant(CLUSTER, Op.CLUSTER_ACTION), [TOPIC_DENIED], [OK]),
    "DeleteRecords DELETE topic": Case(_delete_records, partitions_of("topics"), grant(TOPIC, Op.DELETE),
                                       [TOPIC_DENIED], [OK]),
    "DescribeProducers READ topic": Case(_describe_producers, partitions_of("topics"), grant(TOPIC, Op.READ),
                                         [TOPIC_DENIED], [OK]),
    "DescribeCluster DESCRIBE cluster": Case(
        lambda: request(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False),
        top, grant(CLUSTER, Op.DESCRIBE), [CLUSTER_DENIED], [OK]),
    "DescribeLogDirs DESCRIBE cluster": Case(
        lambda: request(ApiKey.DESCRIBE_LOG_DIRS, 4, topics=None),
        lambda r: [r.error_code, *[d.error_code for d in r.results]],
        grant(CLUSTER, Op.DESCRIBE), [CLUSTER_DENIED], [OK, OK]),
    "ElectLeaders ALTER cluster": Case(
        _elect, lambda r: [r.error_code, *partitions_of("replica_election_results", "partition_result")(r)],
        grant(CLUSTER, Op.ALTER), [CLUSTER_DENIED, CLUSTER_DENIED], [OK, ErrorCode.election_not_needed]),
    "AlterPartitionReassignments ALTER cluster": Case(
        _reassign, lambda r: [r.error_code, *partitions_of("responses")(r)], grant(CLUSTER, Op.ALTER),
        [CLUSTER_DENIED, CLUSTER_DENIED], [OK, ErrorCode.no_reassignment_in_progress]),
    "ListPartitionReassignments DESCRIBE cluster": Case(
        lambda: request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, timeout=SECOND, topics=None),
        top, grant(CLUSTER, Op.DESCRIBE), [CLUSTER_DENIED], [OK]),
    "AlterReplicaLogDirs ALTER cluster": Case(
        _log_dirs_move, partitions_of("results"), grant(CLUSTER, Op.ALTER), [CLUSTER_DENIED],
        [ErrorCode.log_dir_not_found]),
    "UpdateFeatures ALTER cluster": Case(
        _features, lambda r: [r.error_code, *[f.error_code for f in r.results]], grant(CLUSTER, Op.ALTER),
        [CLUSTER_DENIED, CLUSTER_DENIED], [OK, ErrorCode.invalid_update_version]),
    "DescribeClientQuotas DESCRIBE_CONFIGS cluster": Case(
        lambda: request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, components=(), strict=False),
        top, grant(CLUSTER, Op.DESCRIBE_CONFIGS), [CLUSTER_DENIED], [OK]),
    "AlterClientQuotas ALTER_CONFIGS cluster": Case(
        _alter_quotas, lambda r: [e.error_code for e in r.entries], grant(CLUSTER, Op.ALTER_CONFIGS),
        [CLUSTER_DENIED], [OK]),
    "InitProducerId (idempotent) IDEMPOTENT_WRITE cluster": Case(
        lambda: request(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=None, transaction_timeout=SECOND,
                        producer_id=-1, producer_epoch=-1),
        top, grant(CLUSTER, Op.IDEMPOTENT_WRITE), [CLUSTER_DENIED], [OK]),
    "InitProducerId (idempotent) WRITE on another topic": Case(
        lambda: request(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=None, transaction_timeout=SECOND,
                        producer_id=-1, producer_epoch=-1),
        top, grant(TOPIC, Op.WRITE, name="unrelated"), [CLUSTER_DENIED], [OK]),
    "InitProducerId WRITE transactional id": Case(
        lambda: request(ApiKey.INIT_PRODUCER_ID, 4, transactional_id="tx", transaction_timeout=SECOND * 60,
                        producer_id=-1, producer_epoch=-1),
        top, grant(TXN, Op.WRITE, name="tx"), [TXN_DENIED], [OK]),
    "FindCoordinator DESCRIBE group": Case(
        lambda: request(ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=("g",)),
        coordinators, grant(GROUP, Op.DESCRIBE, name="g"), [GROUP_DENIED], [OK]),
    "FindCoordinator DESCRIBE transactional id": Case(
        lambda: request(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=("tx",)),
        coordinators, grant(TXN, Op.DESCRIBE, name="tx"), [TXN_DENIED], [OK]),
    "Produce (transactional) WRITE transactional id first": Case(
        _transactional_produce, partitions_of("responses", "partition_responses"),
        grant(TOPIC, Op.WRITE), [TXN_DENIED], [TXN_DENIED]),
}  # fmt: skip


@pytest.fixture
def secured(broker_factory: Any) -> Secured:
    s = secure(broker_factory)
    s.topic("w")
    return s


@pytest.mark.parametrize("name", sorted(CASES))
def test_denied_then_allowed(secured: Secured, name: str) -> None:
    CASES[name].check(secured)


def test_super_users_pass_every_check(broker_factory: Any) -> None:
    s = secure(broker_factory, super_users=["User:ANONYMOUS"])
    s.topic("w")
    s.deny(CLUSTER, "", Op.ALL)
    s.deny(TOPIC, "*", Op.ALL)
    denials = {TOPIC_DENIED, CLUSTER_DENIED, GROUP_DENIED, TXN_DENIED}
    for name, case in sorted(CASES.items()):
        assert not set(case.codes(call(s.port, case.build()))) & denials, name


def _metadata(version: int, **fields: Any) -> Any:
    t = nested(ApiKey.METADATA, version, "MetadataRequestTopic", topic_id=None, name="w")
    return request(ApiKey.METADATA, version, topics=(t,), allow_auto_topic_creation=False, **fields)


def test_metadata_reports_authorized_operations_when_asked(secured: Secured) -> None:
    secured.grant(TOPIC, "w", Op.READ, Op.ALTER_CONFIGS)
    asked = call(secured.port, _metadata(12, include_topic_authorized_operations=True))
    (topic,) = asked.topics
    assert topic.error_code == OK
    assert topic.topic_authorized_operations == operations_bits(
        [Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS]
    )
    not_asked = call(secured.port, _metadata(12, include_topic_authorized_operations=False))
    assert not_asked.topics[0].topic_authorized_operations == -2147483648
    v10 = _metadata(10, include_topic_authorized_operations=False, include_cluster_authorized_operations=True)
    assert call(secured.port, v10).cluster_authorized_operations == 0  # no DESCRIBE on the cluster
    secured.grant(CLUSTER, "", Op.ALTER)
    assert call(secured.port, v10).cluster_authorized_operations == operations_bits([Op.ALTER, Op.DESCRIBE])


def test_describe_cluster_reports_the_cluster_s_operations(secured: Secured) -> None:
    secured.grant(CLUSTER, "", Op.DESCRIBE, Op.IDEMPOTENT_WRITE)
    r = call(secured.port, request(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True))
    assert r.cluster_authorized_operations == operations_bits([Op.DESCRIBE, Op.IDEMPOTENT_WRITE])


def test_without_an_authorizer_every_operation_is_reported(broker_factory: Any) -> None:
    broker = broker_factory()
    r = call(broker.port, request(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True))
    assert r.error_code == OK
    every = [Op.CREATE, Op.ALTER, Op.DESCRIBE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
             Op.IDEMPOTENT_WRITE]  # fmt: skip
    assert r.cluster_authorized_operations == operations_bits(every)
