"""Where partitions live on several brokers sharing one Redis: each broker's log dir holds the partitions
it leads, and manual replica assignments (CreateTopics, CreatePartitions, AlterPartitionReassignments)
place a partition on a broker, which Metadata then names as its leader while that broker is live."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import kafka.errors as Errors
import pytest
from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KTopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from tests import wire
from tests.broker.helpers import wait

T = 5  # seconds for any one client call


def _name() -> str:
    return f"pl-{uuid.uuid4().hex[:10]}"


def _leaders(port: int, topic: str) -> dict[int, int]:
    """Partition -> leader, as the broker on `port` answers Metadata."""
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name=topic),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    (found,) = wire.call(port, request).topics
    return {p.partition_index: p.leader_id for p in found.partitions}


def _settled(port: int, topic: str, expected: dict[int, int]) -> None:
    """Metadata shows `expected` (brokers cache topics and the broker list for about a second)."""
    wait(lambda: _leaders(port, topic) == expected, 5, f"leaders of {topic} never became {expected}")


def _two_brokers(broker_factory: Callable[..., Any]) -> tuple[Any, Any]:
    first, second = broker_factory(), broker_factory()
    for b in (first, second):
        admin = AdminClient({"bootstrap.servers": b.bootstrap, "broker.address.family": "v4"})
        wait(
            lambda a=admin: len(a.describe_cluster(request_timeout=T).result(T).nodes) == 2, 5, "two brokers"
        )
    return first, second


@pytest.fixture
def pair(broker_factory: Callable[..., Any]) -> tuple[Any, Any]:
    return _two_brokers(broker_factory)


def test_each_broker_lists_the_partitions_it_leads(pair: tuple[Any, Any]) -> None:
    first, second = pair
    kadmin = KafkaAdminClient(bootstrap_servers=first.bootstrap, request_timeout_ms=T * 1000)
    try:
        name = _name()
        kadmin.create_topics({name: {"num_partitions": 6}})
        leaders = _leaders(first.port, name)
        assert set(leaders.values()) == {first.broker_id, second.broker_id}  # spread over both
        listed: dict[int, set[int]] = {}
        for answer in kadmin.describe_log_dirs({name: list(range(6))}):
            (log_dir,) = answer["log_dirs"]
            assert log_dir["log_dir"] == f"/redis/{first.settings.keyspace}"  # one Redis, one name
            listed[answer["broker"]] = {
                p["partition_index"] for t in log_dir["topics"] for p in t["partitions"]
            }
        assert listed == {
            b: {p for p, leader in leaders.items() if leader == b} for b in set(leaders.values())
        }

        here = f"/redis/{first.settings.keyspace}"
        away = next(p for p, leader in leaders.items() if leader == second.broker_id)
        moved = kadmin.alter_replica_log_dirs(
            {(name, away, first.broker_id): here, (name, away, second.broker_id): here}
        )
        codes = {replica.broker_id: error for replica, error in moved.items()}
        assert codes == {first.broker_id: Errors.ReplicaNotAvailableError, second.broker_id: Errors.NoError}
    finally:
        kadmin.close()


def test_a_reassignment_moves_the_leader_until_its_broker_leaves(pair: tuple[Any, Any]) -> None:
    first, second = pair
    kadmin = KafkaAdminClient(bootstrap_servers=first.bootstrap, request_timeout_ms=T * 1000)
    try:
        name = _name()
        kadmin.create_topics({name: {"num_partitions": 4}})
        spread = _leaders(first.port, name)
        home = next(p for p, leader in spread.items() if leader == first.broker_id)
        tp = KTopicPartition(name, home)
        assert kadmin.alter_partition_reassignments({tp: [second.broker_id]}) == {tp: None}
        moved = {**spread, home: second.broker_id}
        _settled(first.port, name, moved)
        _settled(second.port, name, moved)
        assert kadmin.list_partition_reassignments() == {}
        elected = kadmin.elect_leaders(0, {name: [home]}, raise_errors=False).replica_election_results
        assert elected[0].partition_result[0].error_code == ErrorCode.election_not_needed

        second.stop()  # its partitions fall back to the spread over the live brokers: the first alone
        _settled(first.port, name, dict.fromkeys(spread, first.broker_id))
        for election, code in (
            (0, ErrorCode.preferred_leader_not_available),
            (1, ErrorCode.election_not_needed),
        ):
            elected = kadmin.elect_leaders(
                election, {name: [home]}, raise_errors=False
            ).replica_election_results
            assert elected[0].partition_result[0].error_code == code
        refused = kadmin.alter_partition_reassignments({tp: [second.broker_id]})
        assert refused == {tp: Errors.InvalidReplicationAssignmentError}
        assert kadmin.alter_partition_reassignments({tp: [first.broker_id]}) == {tp: None}
        elected = kadmin.elect_leaders(0, {name: [home]}, raise_errors=False).replica_election_results
        assert elected[0].partition_result[0].error_code == ErrorCode.election_not_needed
    finally:
        kadmin.close()


def test_manual_assignments_place_new_partitions(pair: tuple[Any, Any]) -> None:
    first, second = pair
    admin = AdminClient({"bootstrap.servers": first.bootstrap, "broker.address.family": "v4"})
    a, b = first.broker_id, second.broker_id
    name = _name()
    created = admin.create_topics(
        [NewTopic(name, num_partitions=3, replica_assignment=[[b], [a], [b, a]])], request_timeout=T
    )
    created[name].result(T)
    _settled(first.port, name, {0: b, 1: a, 2: b})  # a list's first replica is where the partition goes

    grown = admin.create_partitions(
        [NewPartitions(name, 5, replica_assignment=[[a], [b]])], request_timeout=T
    )
    grown[name].result(T)
    _settled(first.port, name, {0: b, 1: a, 2: b, 3: a, 4: b})

    def refusal(count: int, assignment: list[list[int]]) -> str:
        future = admin.create_partitions([NewPartitions(name, count, replica_assignment=assignment)])[name]
        with pytest.raises(KafkaException) as raised:
            future.result(T)
        error = raised.value.args[0]
        assert error.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
        return str(error.str())

    assert "one replica" in refusal(6, [[a, b]])
    assert "not registered" in refusal(6, [[b + 10]])
    assert "by 2 but 1" in refusal(7, [[a]])
    assert "more than once" in refusal(6, [[a, a]])
    assert len(_leaders(first.port, name)) == 5

    kadmin = KafkaAdminClient(bootstrap_servers=first.bootstrap, request_timeout_ms=T * 1000)
    try:
        answer = kadmin.create_partitions({name: {"count": 7, "assignments": [[b], [b]]}})
        assert [r.error_code for r in answer.results] == [ErrorCode.none]
        _settled(first.port, name, {0: b, 1: a, 2: b, 3: a, 4: b, 5: b, 6: b})
        refused = kadmin.create_partitions({name: {"count": 8, "assignments": [[a, b]]}}, raise_errors=False)
        assert [r.error_code for r in refused.results] == [ErrorCode.invalid_replica_assignment]
    finally:
        kadmin.close()
    elected = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(name, 6)]).result(T)
    assert [error.code() for error in elected.values()] == [KafkaError.ELECTION_NOT_NEEDED]
