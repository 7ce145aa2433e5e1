"""KIP-932 share groups' membership at the wire: ShareGroupHeartbeat and ShareGroupDescribe, the error
codes Kafka gives, a group id used by another kind of group, the group APIs on a share group, and a
share group that outlives its coordinator. The real-client tests are in test_share_group_clients.py."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import make, sibling
from tests.broker.helpers import JOIN_TIMEOUT, share_describe, share_heartbeat, subscription, wait
from tests.wire import call

MINUTE = datetime.timedelta(minutes=1)


def _topic(broker: Any, name: str, partitions: int) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return broker.call(broker.broker.ctx.topics.load(name)).id  # type: ignore[no-any-return]


def _parts(response: Any) -> dict[uuid.UUID, list[int]]:
    assert response.assignment is not None
    return {t.topic_id: sorted(t.partitions) for t in response.assignment.topic_partitions}


def test_members_join_share_a_partition_and_leave(broker) -> None:
    tid = _topic(broker, "s1", 1)
    a = share_heartbeat(broker.port, "sg1", "member-a", 0, ("s1",), rack="r1")
    assert (a.error_code, a.error_message, a.member_id, a.member_epoch) == (
        ErrorCode.none,
        None,
        "member-a",
        1,
    )
    assert a.heartbeat_interval == datetime.timedelta(milliseconds=5000)  # share.heartbeat.interval.ms
    assert _parts(a) == {tid: [0]}
    b = share_heartbeat(broker.port, "sg1", "member-b", 0, ("s1",))
    assert (b.member_epoch, _parts(b)) == (2, {tid: [0]}), "a partition goes to several members"
    steady = share_heartbeat(broker.port, "sg1", "member-a", 1)
    assert (steady.member_epoch, steady.assignment) == (2, None), "unchanged: not sent again"

    (described,) = share_describe(broker.port, "sg1")
    assert (described.error_code, described.group_id, described.group_state) == (
        ErrorCode.none,
        "sg1",
        "Stable",
    )
    assert (described.group_epoch, described.assignment_epoch, described.assignor_name) == (2, 2, "simple")
    members = {m.member_id: m for m in described.members}
    assert set(members) == {"member-a", "member-b"}
    ma = members["member-a"]
    assert (ma.rack_id, ma.member_epoch, ma.client_id, ma.subscribed_topic_names) == (
        "r1",
        2,
        "test",
        ("s1",),
    )
    assert ma.client_host.endswith("127.0.0.1")
    (row,) = ma.assignment.topic_partitions
    assert (row.topic_id, row.topic_name, tuple(row.partitions)) == (tid, "s1", (0,))

    left = share_heartbeat(broker.port, "sg1", "member-b", -1)
    assert (left.error_code, left.member_id, left.member_epoch) == (ErrorCode.none, "member-b", -1)
    assert share_heartbeat(broker.port, "sg1", "member-b", 2).error_code == ErrorCode.unknown_member_id
    assert share_heartbeat(broker.port, "sg1", "member-b", -1).error_code == ErrorCode.unknown_member_id
    (after,) = share_describe(broker.port, "sg1")
    assert [m.member_id for m in after.members] == ["member-a"] and after.group_epoch == 3


def test_bad_heartbeats_get_kafkas_errors(broker) -> None:
    _topic(broker, "s2", 2)
    assert share_heartbeat(broker.port, "sg2", "m", 0, ("s2",)).member_epoch == 1
    for group, member, epoch, topics, code in [
        ("sg2", "", 0, ("s2",), ErrorCode.invalid_request),
        ("sg2", "n", 0, None, ErrorCode.invalid_request),
        ("sg2", "m", -2, None, ErrorCode.invalid_request),
        ("", "m", 0, ("s2",), ErrorCode.invalid_request),
        ("sg2", "m", 5, None, ErrorCode.fenced_member_epoch),
        ("sg2", "stranger", 1, None, ErrorCode.unknown_member_id),
        ("nobody", "m", 1, None, ErrorCode.group_id_not_found),
    ]:
        answer = share_heartbeat(broker.port, group, member, epoch, topics)
        assert answer.error_code == code, (group, member, epoch, answer)
        assert answer.error_message and answer.assignment is None
    empty, missing, other = share_describe(broker.port, "", "nobody", "sg2")
    assert (empty.error_code, missing.error_code) == (
        ErrorCode.invalid_group_id,
        ErrorCode.group_id_not_found,
    )
    assert (missing.error_message, missing.group_state) == ("Group nobody not found.", "Dead")
    assert other.error_code == ErrorCode.none and len(other.members) == 1


def _join_group(port: int, group: str, member: str = "", version: int = 9) -> Any:
    cls = request_type(ApiKey.JOIN_GROUP, version)
    protocol = make(sibling(cls, "JoinGroupRequestProtocol"), name="range", metadata=subscription("s3"))
    return call(
        port,
        make(
            cls,
            group_id=group,
            session_timeout=JOIN_TIMEOUT,
            rebalance_timeout=JOIN_TIMEOUT,
            member_id=member,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(protocol,),
            reason=None,
        ),
    )


def _consumer_hb(port: int, group: str, member: str) -> Any:
    cls = request_type(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
    return call(
        port,
        make(
            cls,
            group_id=group,
            member_id=member,
            member_epoch=0,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=MINUTE,
            subscribed_topic_names=("s3",),
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=(),
        ),
    )


def test_a_group_id_used_by_another_kind_of_group(broker) -> None:
    _topic(broker, "s3", 1)
    asked = _join_group(broker.port, "classic3")  # KIP-394: a member id is handed out first
    assert asked.error_code == ErrorCode.member_id_required
    assert _join_group(broker.port, "classic3", asked.member_id).error_code == ErrorCode.none
    assert _consumer_hb(broker.port, "kip848", "c").error_code == ErrorCode.none
    for group, kind in (("classic3", "classic"), ("kip848", "consumer")):
        refused = share_heartbeat(broker.port, group, "s", 0, ("s3",))
        assert (refused.error_code, refused.error_message) == (
            ErrorCode.group_id_not_found,
            f"Group {group} is not a share group.",
        ), kind
        (described,) = share_describe(broker.port, group)
        assert (described.error_code, described.error_message) == (
            ErrorCode.group_id_not_found,
            f"Group {group} is not a share group.",
        )

    # The other way round: a share group, even an empty one, refuses the other protocols.
    assert share_heartbeat(broker.port, "share3", "s", 0, ("s3",)).error_code == ErrorCode.none
    assert share_heartbeat(broker.port, "share3", "s", -1).error_code == ErrorCode.none
    assert _join_group(broker.port, "share3").error_code == ErrorCode.inconsistent_group_protocol
    kip848 = _consumer_hb(broker.port, "share3", "c")
    assert (kip848.error_code, kip848.error_message) == (
        ErrorCode.group_id_not_found,
        "Group share3 is not a consumer group.",
    )
    cls = request_type(ApiKey.CONSUMER_GROUP_DESCRIBE, 1)
    described = call(broker.port, make(cls, group_ids=("share3",), include_authorized_operations=False))
    assert described.groups[0].error_code == ErrorCode.group_id_not_found
    for version, code in ((5, ErrorCode.none), (6, ErrorCode.group_id_not_found)):
        cls = request_type(ApiKey.DESCRIBE_GROUPS, version)
        classic = call(broker.port, make(cls, groups=("share3",), include_authorized_operations=False))
        assert (classic.groups[0].error_code, classic.groups[0].group_state) == (code, "Dead")
    (still,) = share_describe(broker.port, "share3")
    assert (still.error_code, still.group_state, still.members) == (ErrorCode.none, "Empty", ())


def test_offset_apis_on_a_share_group(broker) -> None:
    tid = _topic(broker, "s4", 1)
    assert share_heartbeat(broker.port, "share4", "s", 0, ("s4",)).error_code == ErrorCode.none
    cls = request_type(ApiKey.OFFSET_COMMIT, 9)
    part = make(
        sibling(cls, "OffsetCommitRequestPartition"),
        partition_index=0,
        committed_offset=5,
        committed_leader_epoch=-1,
        committed_metadata=None,
    )
    topic = make(sibling(cls, "OffsetCommitRequestTopic"), name="s4", topic_id=tid, partitions=(part,))
    for epoch, member in ((-1, ""), (1, "s")):
        body = make(
            cls,
            group_id="share4",
            generation_id_or_member_epoch=epoch,
            member_id=member,
            group_instance_id=None,
            topics=(topic,),
        )
        assert call(broker.port, body).topics[0].partitions[0].error_code == ErrorCode.group_id_not_found

    cls = request_type(ApiKey.OFFSET_FETCH, 9)
    wanted = make(sibling(cls, "OffsetFetchRequestTopics"), name="s4", partition_indexes=(0,))
    for topics in ((wanted,), None):
        group = make(
            sibling(cls, "OffsetFetchRequestGroup"),
            group_id="share4",
            member_id=None,
            member_epoch=-1,
            topics=topics,
        )
        (fetched,) = call(broker.port, make(cls, groups=(group,), require_stable=False)).groups
        assert fetched.error_code == ErrorCode.none
        offsets = [(p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions]
        assert offsets == ([(0, -1)] if topics else [])

    cls = request_type(ApiKey.OFFSET_DELETE, 0)
    doomed = make(
        sibling(cls, "OffsetDeleteRequestTopic"),
        name="s4",
        partitions=(make(sibling(cls, "OffsetDeleteRequestPartition"), partition_index=0),),
    )
    deleted = call(broker.port, make(cls, group_id="share4", topics=(doomed,)))
    assert deleted.error_code == ErrorCode.group_id_not_found


def test_delete_groups_refuses_a_share_group_with_members(broker) -> None:
    _topic(broker, "s5", 1)
    assert share_heartbeat(broker.port, "share5", "s", 0, ("s5",)).error_code == ErrorCode.none
    cls = request_type(ApiKey.DELETE_GROUPS, 2)
    busy = call(broker.port, make(cls, groups_names=("share5",)))
    assert busy.results[0].error_code == ErrorCode.non_empty_group
    assert share_heartbeat(broker.port, "share5", "s", -1).error_code == ErrorCode.none
    done = call(broker.port, make(cls, groups_names=("share5", "share5-never")))
    assert [r.error_code for r in done.results] == [ErrorCode.none, ErrorCode.group_id_not_found]
    (gone,) = share_describe(broker.port, "share5")
    assert gone.error_code == ErrorCode.group_id_not_found
    again = share_heartbeat(broker.port, "share5", "t", 0, ("s5",))
    assert (again.error_code, again.member_epoch) == (ErrorCode.none, 1), "the id is free again"


def test_another_broker_answers_not_coordinator(broker_factory) -> None:
    first, second = broker_factory(), broker_factory()
    _topic(first, "s6", 1)
    wait(
        lambda: len(first.call(first.broker.ctx.cluster.live_brokers())) == 2, 10, "the first sees the second"
    )
    group = next(
        f"share6-{i}"
        for i in range(100)
        if first.call(first.broker.ctx.groups.coordinator_for(f"share6-{i}")).broker_id == second.broker_id
    )
    refused = share_heartbeat(first.port, group, "s", 0, ("s6",))
    assert (refused.error_code, refused.member_epoch) == (ErrorCode.not_coordinator, 0)
    assert share_describe(first.port, group)[0].error_code == ErrorCode.group_id_not_found  # nothing yet
    assert share_heartbeat(second.port, group, "s", 0, ("s6",)).error_code == ErrorCode.none
    assert share_describe(first.port, group)[0].error_code == ErrorCode.not_coordinator


def test_a_restarted_broker_keeps_the_share_group(broker_factory) -> None:
    first = broker_factory()
    tid = _topic(first, "s7", 2)
    a = share_heartbeat(first.port, "share7", "a", 0, ("s7",))
    b = share_heartbeat(first.port, "share7", "b", 0, ("s7",))
    assert (a.member_epoch, b.member_epoch) == (1, 2)
    first.stop()
    second = broker_factory()
    wait(
        lambda: second.call(second.broker.ctx.cluster.live_brokers()) == [second.broker.ctx.me],
        10,
        "first deregistered",
    )
    (described,) = share_describe(second.port, "share7")
    assert (described.error_code, described.group_state, described.group_epoch) == (
        ErrorCode.none,
        "Stable",
        2,
    )
    assert {m.member_id: m.member_epoch for m in described.members} == {"a": 1, "b": 2}
    moved_on = share_heartbeat(second.port, "share7", "a", 1)
    assert (moved_on.error_code, moved_on.member_epoch) == (ErrorCode.none, 2)
    assert len(_parts(moved_on)[tid]) == 1, "a takes its half on the new coordinator"
    assert share_heartbeat(second.port, "share7", "b", 2).error_code == ErrorCode.none
