"""KIP-1071 streams groups at the wire: StreamsGroupHeartbeat and StreamsGroupDescribe. The broker
takes the first member's topology, creates its internal topics, assigns tasks (subtopology,
partition) once the topology is ready, revokes before it reassigns, says why a group is not ready,
and refuses malformed requests and group ids of another kind. A real Kafka Streams application on
group.protocol=streams is in tests/java/test_kafka_streams.py."""

from __future__ import annotations

import datetime
import time
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from tests.wire import call

HEARTBEAT = request_type(ApiKey.STREAMS_GROUP_HEARTBEAT, 0)
DESCRIBE = request_type(ApiKey.STREAMS_GROUP_DESCRIBE, 0)
MINUTE = datetime.timedelta(minutes=1)
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS = 1, 3


def _topic(broker: Any, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def _topology(source: str, changelog: str, epoch: int = 0) -> Any:
    """One subtopology reading `source`, with a state store logged to `changelog`."""
    info = make(
        sibling(HEARTBEAT, "TopicInfo"),
        name=changelog,
        partitions=0,
        replication_factor=0,
        topic_configs=(make(sibling(HEARTBEAT, "KeyValue"), key="cleanup.policy", value="compact"),),
    )
    sub = make(
        sibling(HEARTBEAT, "Subtopology"),
        subtopology_id="0",
        source_topics=(source,),
        state_changelog_topics=(info,),
        repartition_source_topics=(),
        copartition_groups=(),
    )
    return make(sibling(HEARTBEAT, "Topology"), epoch=epoch, subtopologies=(sub,))


def _tasks(partitions: dict[str, list[int]] | None) -> Any:
    if partitions is None:
        return None
    return tuple(
        make(sibling(HEARTBEAT, "TaskIds"), subtopology_id=s, partitions=tuple(p))
        for s, p in partitions.items()
    )


def heartbeat(
    broker: Any,
    group: str,
    member: str,
    epoch: int,
    topology: Any = None,
    active: dict[str, list[int]] | None = None,
) -> Any:
    joining = epoch == 0
    body = make(
        HEARTBEAT,
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        endpoint_information_epoch=-1,
        rebalance_timeout=MINUTE if joining else datetime.timedelta(milliseconds=-1),
        topology=topology,
        active_tasks=_tasks(active if active is not None else ({} if joining else None)),
        standby_tasks=() if joining else None,
        warmup_tasks=() if joining else None,
        process_id=f"process-{member}" if joining else None,
        user_endpoint=make(sibling(HEARTBEAT, "Endpoint"), host="localhost", port=7070) if joining else None,
        client_tags=() if joining else None,
        task_offsets=None,
        task_end_offsets=None,
    )
    return call(broker.port, body)


def consumer_join(broker: Any, group: str, topic: str) -> Any:
    """A KIP-848 consumer joining `group`."""
    cls = request_type(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
    body = make(cls, group_id=group, member_id="c-1", member_epoch=0, rebalance_timeout=MINUTE,
                subscribed_topic_names=(topic,), topic_partitions=())  # fmt: skip
    return call(broker.port, body)


def tasks_of(response: Any) -> dict[str, list[int]] | None:
    if response.active_tasks is None:
        return None
    return {t.subtopology_id: sorted(t.partitions) for t in response.active_tasks}


def statuses(response: Any) -> list[int]:
    return [s.status_code for s in response.status or ()]


def describe(broker: Any, group: str) -> Any:
    (described,) = call(
        broker.port, make(DESCRIBE, group_ids=(group,), include_authorized_operations=False)
    ).groups
    return described


def test_the_broker_creates_internal_topics_then_assigns_tasks(broker) -> None:
    _topic(broker, "st-in", 2)
    first = heartbeat(broker, "app1", "m-a", 0, _topology("st-in", "app1-store-changelog"))
    assert (first.error_code, first.member_id, first.member_epoch) == (ErrorCode.none, "m-a", 1)
    assert statuses(first) == [MISSING_INTERNAL_TOPICS] and tasks_of(first) == {}
    assert first.heartbeat_interval == datetime.timedelta(milliseconds=5000)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    changelog = admin.list_topics(timeout=10).topics["app1-store-changelog"]
    assert len(changelog.partitions) == 2, "a changelog has one partition per task"
    resource = ConfigResource(ConfigResource.Type.TOPIC, "app1-store-changelog")
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["cleanup.policy"].value == "compact"

    ready = heartbeat(broker, "app1", "m-a", 1, active={})
    assert (ready.error_code, statuses(ready), ready.member_epoch) == (ErrorCode.none, [], 2)
    assert tasks_of(ready) == {"0": [0, 1]}
    group = describe(broker, "app1")
    assert (group.error_code, group.group_state, group.group_epoch, group.assignment_epoch) == (
        ErrorCode.none,
        "Stable",
        2,
        2,
    )
    assert [s.subtopology_id for s in group.topology.subtopologies] == ["0"]
    (member,) = group.members
    assert (member.member_id, member.process_id, member.topology_epoch) == ("m-a", "process-m-a", 0)
    assert (member.user_endpoint.host, member.user_endpoint.port) == ("localhost", 7070)
    assert [(t.subtopology_id, sorted(t.partitions)) for t in member.assignment.active_tasks] == [
        ("0", [0, 1])
    ]


def test_a_task_moves_only_after_its_owner_revoked_it(broker) -> None:
    _topic(broker, "st-move", 2)
    topology = _topology("st-move", "app2-store-changelog")
    heartbeat(broker, "app2", "m-a", 0, topology)
    a = heartbeat(broker, "app2", "m-a", 1, active={})
    assert tasks_of(a) == {"0": [0, 1]}
    b = heartbeat(broker, "app2", "m-b", 0, topology)
    assert tasks_of(b) == {}, "m-a still holds both tasks"
    a = heartbeat(broker, "app2", "m-a", a.member_epoch, active={"0": [0, 1]})
    assert len(tasks_of(a)["0"]) == 1, "m-a is told to give one task up"  # type: ignore[index]
    kept = tasks_of(a)["0"]  # type: ignore[index]
    a = heartbeat(broker, "app2", "m-a", a.member_epoch, active={"0": kept})
    b = heartbeat(broker, "app2", "m-b", b.member_epoch, active={})
    assert tasks_of(b) == {"0": [p for p in (0, 1) if p not in kept]}
    assert describe(broker, "app2").group_state == "Stable"

    left = heartbeat(broker, "app2", "m-b", -1)
    assert (left.error_code, left.member_epoch) == (ErrorCode.none, -1)
    a = heartbeat(broker, "app2", "m-a", a.member_epoch, active={"0": kept})
    assert tasks_of(a) == {"0": [0, 1]}, "the task that left comes back"


def test_a_group_without_its_source_topics_is_not_ready(broker) -> None:
    first = heartbeat(broker, "app3", "m-a", 0, _topology("st-absent", "app3-store-changelog"))
    assert first.error_code == ErrorCode.none
    assert statuses(first) == [MISSING_SOURCE_TOPICS] and tasks_of(first) == {}
    assert "st-absent" in first.status[0].status_detail
    assert describe(broker, "app3").group_state == "NotReady"
    _topic(broker, "st-absent", 3)
    deadline = time.monotonic() + 10
    while True:  # the broker's topic cache catches up within a moment
        beat = heartbeat(broker, "app3", "m-a", first.member_epoch, active={})
        if MISSING_SOURCE_TOPICS not in statuses(beat) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert statuses(beat) == [MISSING_INTERNAL_TOPICS]
    beat = heartbeat(broker, "app3", "m-a", beat.member_epoch, active={})
    assert (statuses(beat), tasks_of(beat)) == ([], {"0": [0, 1, 2]})


def test_malformed_heartbeats_and_other_kinds_of_group_are_refused(broker) -> None:
    _topic(broker, "st-bad", 1)
    topology = _topology("st-bad", "app4-store-changelog")
    assert heartbeat(broker, "app4", "", 0, topology).error_code == ErrorCode.invalid_request
    no_topology = heartbeat(broker, "app4", "m-a", 0, None)
    assert (no_topology.error_code, no_topology.error_message) == (
        ErrorCode.invalid_request,
        "Topology must be non-empty in first request.",
    )
    assert heartbeat(broker, "app4", "m-a", 5, active={}).error_code == ErrorCode.group_id_not_found
    assert heartbeat(broker, "app4", "m-a", 0, topology).error_code == ErrorCode.none
    assert heartbeat(broker, "app4", "m-x", 3, active={}).error_code == ErrorCode.unknown_member_id
    assert heartbeat(broker, "app4", "m-a", 7, active={}).error_code == ErrorCode.fenced_member_epoch

    consumer = consumer_join(broker, "app4", "st-bad")
    assert consumer.error_code == ErrorCode.group_id_not_found, "a streams group is no consumer group"
    assert consumer_join(broker, "cg4", "st-bad").error_code == ErrorCode.none
    other = heartbeat(broker, "cg4", "m-a", 0, topology)
    assert (other.error_code, other.error_message) == (
        ErrorCode.group_id_not_found,
        "Group cg4 is not a streams group.",
    )
    assert describe(broker, "cg4").error_code == ErrorCode.group_id_not_found
    assert describe(broker, "nobody").error_code == ErrorCode.group_id_not_found


def test_a_streams_group_is_kept_in_redis(broker) -> None:
    _topic(broker, "st-kept", 1)
    heartbeat(broker, "app5", "m-a", 0, _topology("st-kept", "app5-store-changelog"))
    saved = broker.call(broker.broker.ctx.store.group_states(["app5"]))["app5"]
    assert saved["type"] == "streams"
    assert '"sources": ["st-kept"]' in saved["topology"]
