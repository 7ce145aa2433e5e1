"""KIP-848 at the wire: exact error codes, reconciliation step by step, every advertised version."""

from __future__ import annotations

import dataclasses
import datetime
import time
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type
from schooner.protocol.messages import make, sibling
from tests.broker.helpers import join_request
from tests.wire import call

MINUTE = datetime.timedelta(minutes=1)


def _topic(broker: Any, name: str, partitions: int) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return broker.call(broker.broker.ctx.topics.load(name)).id  # type: ignore[no-any-return]


def _hb(
    broker: Any,
    group: str,
    member: str,
    epoch: int,
    version: int = 1,
    owned: dict[uuid.UUID, list[int]] | None = None,
    **fields: Any,
) -> Any:
    """One ConsumerGroupHeartbeat. A join (epoch 0) carries the fields a first request must have."""
    cls = request_type(ApiKey.CONSUMER_GROUP_HEARTBEAT, version)
    tp = sibling(cls, "TopicPartitions")
    if epoch == 0:
        fields.setdefault("rebalance_timeout", MINUTE)
        owned = owned or {}
    values: dict[str, Any] = dict(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        instance_id=None,
        rack_id=None,
        subscribed_topic_names=None,
        subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=None
        if owned is None
        else tuple(make(tp, topic_id=t, partitions=tuple(ps)) for t, ps in owned.items()),
    )
    values.update(fields)
    return call(broker.port, make(cls, **values))


def _parts(response: Any) -> dict[uuid.UUID, list[int]]:
    if response.assignment is None:
        return {}
    return {t.topic_id: sorted(t.partitions) for t in response.assignment.topic_partitions}


def test_join_assign_and_leave(broker) -> None:
    tid = _topic(broker, "w1", 4)
    joined = _hb(broker, "wg1", "m1", 0, subscribed_topic_names=("w1",))
    assert joined.error_code == ErrorCode.none, joined
    assert joined.member_id == "m1" and joined.member_epoch == 1
    assert joined.heartbeat_interval.total_seconds() == 5  # the default consumer_group_heartbeat_ms
    assert _parts(joined) == {tid: [0, 1, 2, 3]}
    steady = _hb(broker, "wg1", "m1", 1)
    assert steady.error_code == ErrorCode.none and steady.member_epoch == 1
    assert steady.assignment is None  # unchanged: not repeated
    left = _hb(broker, "wg1", "m1", -1)
    assert (left.error_code, left.member_epoch, left.member_id) == (ErrorCode.none, -1, "m1")
    gone = _hb(broker, "wg1", "m1", 1)
    assert gone.error_code == ErrorCode.unknown_member_id


def test_error_codes(broker) -> None:
    _topic(broker, "w2", 2)
    assert _hb(broker, "wg2", "m1", 0, subscribed_topic_names=("w2",)).member_epoch == 1
    fenced = _hb(broker, "wg2", "m1", 6)
    assert fenced.error_code == ErrorCode.fenced_member_epoch and fenced.error_message
    assert _hb(broker, "wg2", "nobody", 1).error_code == ErrorCode.unknown_member_id
    bad_assignor = _hb(broker, "wg2", "m2", 0, subscribed_topic_names=("w2",), server_assignor="sticky")
    assert bad_assignor.error_code == ErrorCode.unsupported_assignor
    assert "uniform" in bad_assignor.error_message and "range" in bad_assignor.error_message
    bad_regex = _hb(broker, "wg2", "m2", 0, subscribed_topic_regex="w2(")
    assert bad_regex.error_code == ErrorCode.invalid_regular_expression
    invalid = [
        _hb(broker, "wg2", "", 0, subscribed_topic_names=("w2",)),  # v1: the client names itself
        _hb(broker, "", "m2", 0, subscribed_topic_names=("w2",)),
        _hb(
            broker,
            "wg2",
            "m2",
            0,
            subscribed_topic_names=("w2",),
            rebalance_timeout=datetime.timedelta(0, 0, 0, -1),
        ),
        _hb(broker, "wg2", "m2", 0),  # neither topic names nor a regex
        _hb(broker, "wg2", "m2", 0, subscribed_topic_names=("w2",), owned={uuid.uuid4(): [0]}),
        _hb(broker, "wg2", "m2", -2),  # a static leave without an instance id
        _hb(broker, "wg2", "m2", -3),
    ]
    assert [r.error_code for r in invalid] == [ErrorCode.invalid_request] * len(invalid), invalid
    assert all(r.error_message for r in invalid)
    # v0: the coordinator names a member that comes without an id.
    named = _hb(broker, "wg2", "", 0, version=0, subscribed_topic_names=("w2",))
    assert named.error_code == ErrorCode.none and named.member_id
    assert _hb(broker, "wg2", "m1", -1).error_code == ErrorCode.none
    assert _hb(broker, "wg2", "m1", -1).error_code == ErrorCode.unknown_member_id
    assert _hb(broker, "wg-none", "m1", 3).error_code == ErrorCode.group_id_not_found


def test_stale_epoch_after_a_lost_response_is_accepted(broker) -> None:
    tid = _topic(broker, "w3", 2)
    first = _hb(broker, "wg3", "a", 0, subscribed_topic_names=("w3",))
    assert first.member_epoch == 1
    _hb(broker, "wg3", "b", 0, subscribed_topic_names=("w3",))  # epoch 2; a gives up one partition
    shrunk = _hb(broker, "wg3", "a", 1)
    assert shrunk.member_epoch == 1 and len(_parts(shrunk)[tid]) == 1
    moved = _hb(broker, "wg3", "a", 1, owned=_parts(shrunk))
    assert moved.member_epoch == 2
    # The answer with the new epoch was lost: the previous epoch with a subset of the partitions is fine...
    again = _hb(broker, "wg3", "a", 1, owned=_parts(shrunk))
    assert again.error_code == ErrorCode.none and again.member_epoch == moved.member_epoch
    # ...but not with partitions it was never given, nor without saying what it owns.
    assert _hb(broker, "wg3", "a", 1, owned={tid: [0, 1]}).error_code == ErrorCode.fenced_member_epoch
    assert _hb(broker, "wg3", "a", 1).error_code == ErrorCode.fenced_member_epoch


def test_revocation_comes_before_assignment(broker) -> None:
    tid = _topic(broker, "w4", 4)
    a = _hb(broker, "wg4", "a", 0, subscribed_topic_names=("w4",))
    assert (a.member_epoch, _parts(a)) == (1, {tid: [0, 1, 2, 3]})
    b = _hb(broker, "wg4", "b", 0, subscribed_topic_names=("w4",))
    assert b.member_epoch == 2 and _parts(b) == {}  # its partitions are still a's
    a = _hb(broker, "wg4", "a", 1, owned={tid: [0, 1, 2, 3]})
    assert a.member_epoch == 1 and len(_parts(a)[tid]) == 2  # revoke first, same epoch
    kept = _parts(a)
    assert _parts(_hb(broker, "wg4", "b", 2, owned={})) == {}  # a has not confirmed yet
    described = _describe(broker, "wg4")
    assert described.group_state == "Reconciling" and described.group_epoch == 2
    a = _hb(broker, "wg4", "a", 1, owned=kept)
    assert a.member_epoch == 2 and a.assignment is None
    b = _hb(broker, "wg4", "b", 2, owned={})
    assert b.member_epoch == 2 and sorted(_parts(b)[tid] + kept[tid]) == [0, 1, 2, 3]
    described = _describe(broker, "wg4")
    assert described.group_state == "Stable" and described.assignor_name == "uniform"
    by_id = {m.member_id: m for m in described.members}
    assert [p for t in by_id["b"].assignment.topic_partitions for p in t.partitions] == _parts(b)[tid]
    assert by_id["a"].target_assignment.topic_partitions[0].topic_name == "w4"
    assert by_id["a"].member_type == 1


def test_partitions_of_grown_and_new_topics_reach_the_assignment(broker) -> None:
    tid = _topic(broker, "w5", 2)
    joined = _hb(broker, "wg5", "a", 0, subscribed_topic_names=("w5", "w5-later"))
    assert _parts(joined) == {tid: [0, 1]}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_partitions([NewPartitions("w5", 4)])["w5"].result(10)
    later = _topic(broker, "w5-later", 1)
    deadline = time.monotonic() + 10
    parts: dict[uuid.UUID, list[int]] = {}
    epoch = joined.member_epoch
    while parts != {tid: [0, 1, 2, 3], later: [0]}:
        assert time.monotonic() < deadline, parts
        answer = _hb(broker, "wg5", "a", epoch)
        epoch = answer.member_epoch
        parts = _parts(answer) or parts
        time.sleep(0.2)
    assert epoch > 1


def test_regex_subscription(broker) -> None:
    one = _topic(broker, "rx-one", 1)
    joined = _hb(broker, "wg6", "a", 0, subscribed_topic_regex="rx-.*")
    assert _parts(joined) == {one: [0]}
    two = _topic(broker, "rx-two", 2)
    deadline = time.monotonic() + 10
    parts: dict[uuid.UUID, list[int]] = {}
    epoch = joined.member_epoch
    while parts != {one: [0], two: [0, 1]}:
        assert time.monotonic() < deadline, parts
        answer = _hb(broker, "wg6", "a", epoch)
        epoch, parts = answer.member_epoch, _parts(answer) or parts
        time.sleep(0.2)
    assert _describe(broker, "wg6").members[0].subscribed_topic_regex == "rx-.*"


def test_range_assignor_and_static_members(broker) -> None:
    tid = _topic(broker, "w7", 6)
    a = _hb(broker, "wg7", "a1", 0, subscribed_topic_names=("w7",), server_assignor="range", instance_id="A")
    b = _hb(broker, "wg7", "b1", 0, subscribed_topic_names=("w7",), server_assignor="range", instance_id="B")
    a = _hb(broker, "wg7", "a1", a.member_epoch, owned=_parts(a), instance_id="A")
    a = _hb(broker, "wg7", "a1", a.member_epoch, owned=_parts(a) or {tid: [0, 1, 2]}, instance_id="A")
    b = _hb(broker, "wg7", "b1", b.member_epoch, owned={}, instance_id="B")
    assert _describe(broker, "wg7").assignor_name == "range"
    assert _parts(b) == {tid: [3, 4, 5]}  # instance "B" sorts after "A": the second range
    # The same instance id cannot join twice...
    twin = _hb(broker, "wg7", "b2", 0, subscribed_topic_names=("w7",), instance_id="B")
    assert twin.error_code == ErrorCode.unreleased_instance_id
    fenced = _hb(broker, "wg7", "b2", b.member_epoch, instance_id="B")
    assert fenced.error_code == ErrorCode.fenced_instance_id
    # ...until it steps out (-2): then a restart takes its place and partitions, with no new group epoch.
    epoch = _describe(broker, "wg7").group_epoch
    out = _hb(broker, "wg7", "b1", -2, instance_id="B")
    assert (out.error_code, out.member_epoch) == (ErrorCode.none, -2)
    back = _hb(
        broker, "wg7", "b2", 0, subscribed_topic_names=("w7",), server_assignor="range", instance_id="B"
    )
    assert back.error_code == ErrorCode.none and _parts(back) == {tid: [3, 4, 5]}
    assert back.member_epoch == epoch and _describe(broker, "wg7").group_epoch == epoch
    assert _hb(broker, "wg7", "b1", b.member_epoch).error_code == ErrorCode.unknown_member_id


def test_group_max_size(broker) -> None:
    _topic(broker, "w8", 1)
    broker.broker.ctx.groups.consumer.max_size = 1
    assert _hb(broker, "wg8", "a", 0, subscribed_topic_names=("w8",)).error_code == ErrorCode.none
    full = _hb(broker, "wg8", "b", 0, subscribed_topic_names=("w8",))
    assert full.error_code == ErrorCode.group_max_size_reached


def test_a_group_id_is_either_classic_or_consumer(broker) -> None:
    _topic(broker, "w9", 1)
    classic = call(broker.port, join_request(3))  # classic group "g3", one member
    assert classic.error_code == ErrorCode.none
    refused = _hb(broker, "g3", "m", 0, subscribed_topic_names=("w9",))
    assert refused.error_code == ErrorCode.group_id_not_found
    assert _hb(broker, "wg9", "m", 0, subscribed_topic_names=("w9",)).error_code == ErrorCode.none
    join = dataclasses.replace(join_request(3), group_id="wg9")
    assert call(broker.port, join).error_code == ErrorCode.inconsistent_group_protocol
    # Classic requests find no classic member in a consumer group.
    hb_cls = request_type(ApiKey.HEARTBEAT, 3)
    beat = call(
        broker.port, make(hb_cls, group_id="wg9", generation_id=1, member_id="m", group_instance_id=None)
    )
    assert beat.error_code == ErrorCode.unknown_member_id
    # Once empty, a consumer group may become classic again, keeping its offsets.
    assert _hb(broker, "wg9", "m", -1).error_code == ErrorCode.none
    assert call(broker.port, join).error_code == ErrorCode.none


def test_describe_list_and_classic_describe(broker) -> None:
    _topic(broker, "w10", 2)
    _hb(broker, "wg10", "m", 0, subscribed_topic_names=("w10",))
    call(broker.port, join_request(4))  # a classic group "g4" (no member yet: MEMBER_ID_REQUIRED)
    missing = _describe(broker, "never")
    assert missing.error_code == ErrorCode.group_id_not_found
    list_cls = request_type(ApiKey.LIST_GROUPS, 5)
    listed = call(broker.port, make(list_cls, states_filter=(), types_filter=("consumer",)))
    assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed.groups] == [
        ("wg10", "consumer", "Stable", "consumer")
    ]
    stable = call(broker.port, make(list_cls, states_filter=("Stable",), types_filter=()))
    assert "wg10" in [g.group_id for g in stable.groups]
    for version, code in ((5, ErrorCode.none), (6, ErrorCode.group_id_not_found)):
        cls = request_type(ApiKey.DESCRIBE_GROUPS, version)
        described = call(broker.port, make(cls, groups=("wg10",), include_authorized_operations=False))
        assert (described.groups[0].error_code, described.groups[0].group_state) == (code, "Dead")


def test_offset_commit_and_fetch_check_the_member_epoch(broker) -> None:
    tid = _topic(broker, "w11", 1)
    joined = _hb(broker, "wg11", "m", 0, subscribed_topic_names=("w11",))
    epoch = joined.member_epoch

    def commit(member: str, member_epoch: int, version: int = 9) -> ErrorCode:
        cls = request_type(ApiKey.OFFSET_COMMIT, version)
        part = make(sibling(cls, "OffsetCommitRequestPartition"), partition_index=0, committed_offset=5,
                    committed_leader_epoch=-1, committed_metadata=None)  # fmt: skip
        topic = make(sibling(cls, "OffsetCommitRequestTopic"), name="w11", topic_id=tid, partitions=(part,))
        body = make(
            cls,
            group_id="wg11",
            generation_id_or_member_epoch=member_epoch,
            member_id=member,
            group_instance_id=None,
            topics=(topic,),
        )
        return call(broker.port, body).topics[0].partitions[0].error_code  # type: ignore[no-any-return]

    def fetch(member: str | None, member_epoch: int) -> ErrorCode:
        cls = request_type(ApiKey.OFFSET_FETCH, 9)
        topic = make(sibling(cls, "OffsetFetchRequestTopics"), name="w11", partition_indexes=(0,))
        group = make(sibling(cls, "OffsetFetchRequestGroup"), group_id="wg11", member_id=member,
                     member_epoch=member_epoch, topics=(topic,))  # fmt: skip
        answer = call(broker.port, make(cls, groups=(group,), require_stable=False))
        return answer.groups[0].error_code  # type: ignore[no-any-return]

    assert commit("m", epoch) == ErrorCode.none
    assert commit("m", epoch - 1) == ErrorCode.stale_member_epoch
    assert commit("m", epoch + 1) == ErrorCode.stale_member_epoch
    assert commit("who", epoch) == ErrorCode.unknown_member_id
    assert commit("", -1) == ErrorCode.unknown_member_id  # the group has members
    assert commit("m", epoch, version=8) == ErrorCode.unsupported_version
    assert fetch("m", epoch) == ErrorCode.none
    assert fetch("m", epoch + 3) == ErrorCode.stale_member_epoch
    assert fetch("who", epoch) == ErrorCode.unknown_member_id
    assert fetch(None, -1) == ErrorCode.none  # the admin client
    _hb(broker, "wg11", "m", -1)
    assert commit("", -1) == ErrorCode.none  # an empty group takes offsets from anyone


def _describe(broker: Any, group: str, version: int = 1) -> Any:
    cls = request_type(ApiKey.CONSUMER_GROUP_DESCRIBE, version)
    return call(broker.port, make(cls, group_ids=(group,), include_authorized_operations=False)).groups[0]


@pytest.mark.parametrize("version", range(SUPPORTED_VERSIONS[ApiKey.CONSUMER_GROUP_HEARTBEAT][1] + 1))
def test_every_heartbeat_and_describe_version(broker, version: int) -> None:
    tid = _topic(broker, f"v{version}", 3)
    group = f"vg{version}"
    joined = _hb(
        broker,
        group,
        "" if version == 0 else "mine",
        0,
        version=version,
        subscribed_topic_names=(f"v{version}",),
    )
    assert joined.error_code == ErrorCode.none and _parts(joined) == {tid: [0, 1, 2]}
    member = joined.member_id
    beat = _hb(broker, group, member, joined.member_epoch, version=version, owned=_parts(joined))
    assert beat.error_code == ErrorCode.none and beat.member_epoch == joined.member_epoch
    low, high = SUPPORTED_VERSIONS[ApiKey.CONSUMER_GROUP_DESCRIBE]
    for describe_version in range(low, high + 1):
        described = _describe(broker, group, describe_version)
        assert described.error_code == ErrorCode.none and described.group_state == "Stable"
        assert [m.member_id for m in described.members] == [member]
        assert described.members[0].assignment.topic_partitions[0].partitions == (0, 1, 2)
    left = _hb(broker, group, member, -1, version=version)
    assert left.error_code == ErrorCode.none and left.member_epoch == -1
    assert _describe(broker, group).group_state == "Empty"


def test_silent_members_are_removed(broker_factory) -> None:
    broker = broker_factory(consumer_group_session_ms=1500)
    tid = _topic(broker, "w12", 2)
    quiet = _hb(broker, "wg12", "quiet", 0, subscribed_topic_names=("w12",))
    assert _parts(quiet) == {tid: [0, 1]}
    # "slow" never confirms its revocation within its rebalance timeout (200 ms).
    slow = _hb(broker, "wg13", "slow", 0, subscribed_topic_names=("w12",), rebalance_timeout=MINUTE / 300)
    assert _parts(slow) == {tid: [0, 1]}
    busy = _hb(broker, "wg13", "busy", 0, subscribed_topic_names=("w12",))
    assert len(_parts(_hb(broker, "wg13", "slow", 1))[tid]) == 1  # asked to give one up
    loud = _hb(broker, "wg12", "loud", 0, subscribed_topic_names=("w12",))
    held = {"loud": _parts(loud), "busy": _parts(busy)}
    epochs = {"loud": loud.member_epoch, "busy": busy.member_epoch}
    deadline = time.monotonic() + 10
    while held != {"loud": {tid: [0, 1]}, "busy": {tid: [0, 1]}}:
        assert time.monotonic() < deadline, (_describe(broker, "wg12"), _describe(broker, "wg13"))
        time.sleep(0.2)
        for member, group in (("loud", "wg12"), ("busy", "wg13")):
            answer = _hb(broker, group, member, epochs[member], owned=held[member])
            epochs[member] = answer.member_epoch
            if answer.assignment is not None:
                held[member] = _parts(answer)
    assert [m.member_id for m in _describe(broker, "wg12").members] == ["loud"]
    assert [m.member_id for m in _describe(broker, "wg13").members] == ["busy"]
    assert _hb(broker, "wg12", "quiet", 1).error_code == ErrorCode.unknown_member_id
