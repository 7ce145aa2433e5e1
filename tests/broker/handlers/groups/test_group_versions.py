"""Every advertised version of the group APIs decodes, runs, and encodes a response the client can read."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import SUPPORTED_VERSIONS, ApiKey, request_type
from schooner.protocol.messages import make, sibling
from tests.broker.helpers import join_request
from tests.wire import call


@pytest.mark.parametrize("version", range(SUPPORTED_VERSIONS[ApiKey.JOIN_GROUP][0], 10))
def test_join_sync_heartbeat_leave_every_version(broker, version: int) -> None:
    joined = call(broker.port, join_request(version))
    if version >= 4:
        assert joined.error_code == ErrorCode.member_id_required and joined.member_id
        joined = call(broker.port, join_request(version, joined.member_id))
    assert joined.error_code == ErrorCode.none, joined
    assert joined.leader == joined.member_id and joined.generation_id == 1
    member, generation, group = joined.member_id, joined.generation_id, f"g{version}"

    sync_version = min(version, SUPPORTED_VERSIONS[ApiKey.SYNC_GROUP][1])
    sync_cls = request_type(ApiKey.SYNC_GROUP, sync_version)
    assignment = sibling(sync_cls, "SyncGroupRequestAssignment")
    synced = call(
        broker.port,
        make(
            sync_cls,
            group_id=group,
            generation_id=generation,
            member_id=member,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(assignment(member_id=member, assignment=b"mine"),),
        ),
    )
    assert synced.error_code == ErrorCode.none and synced.assignment == b"mine"

    hb_version = min(version, SUPPORTED_VERSIONS[ApiKey.HEARTBEAT][1])
    hb_cls = request_type(ApiKey.HEARTBEAT, hb_version)
    beat = call(
        broker.port,
        make(hb_cls, group_id=group, generation_id=generation, member_id=member, group_instance_id=None),
    )
    assert beat.error_code == ErrorCode.none
    stale = call(broker.port, make(hb_cls, group_id=group, generation_id=generation + 5, member_id=member))
    assert stale.error_code == ErrorCode.illegal_generation
    unknown = call(broker.port, make(hb_cls, group_id=group, generation_id=generation, member_id="who"))
    assert unknown.error_code == ErrorCode.unknown_member_id

    leave_version = min(version, SUPPORTED_VERSIONS[ApiKey.LEAVE_GROUP][1])
    leave_cls = request_type(ApiKey.LEAVE_GROUP, leave_version)
    if leave_version >= 3:
        identity = sibling(leave_cls, "MemberIdentity")
        left = call(
            broker.port,
            make(
                leave_cls,
                group_id=group,
                members=(make(identity, member_id=member, group_instance_id=None, reason=None),),
            ),
        )
        assert left.error_code == ErrorCode.none and left.members[0].error_code == ErrorCode.none
    else:
        left = call(broker.port, make(leave_cls, group_id=group, member_id=member))
        assert left.error_code == ErrorCode.none


# Every field each API has in some version (make() refuses a name no version of the API has).
_ADMIN_FIELDS: dict[int, dict[str, object]] = {
    ApiKey.FIND_COORDINATOR: dict(key="grp", key_type=0, coordinator_keys=("grp", "other")),
    ApiKey.DESCRIBE_GROUPS: dict(groups=("grp",), include_authorized_operations=False),
    ApiKey.LIST_GROUPS: dict(states_filter=(), types_filter=()),
    ApiKey.DELETE_GROUPS: dict(groups_names=("never-seen",)),
}


@pytest.mark.parametrize(
    "api", [ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS]
)
def test_group_admin_apis_every_version(broker, api: int) -> None:
    low, high = SUPPORTED_VERSIONS[api]
    for version in range(low, high + 1):
        cls = request_type(api, version)
        body = make(cls, **_ADMIN_FIELDS[api])
        response = call(broker.port, body)
        if api == ApiKey.FIND_COORDINATOR:
            if version >= 4:
                assert [c.node_id for c in response.coordinators] == [broker.broker_id] * 2
            else:
                assert response.node_id == broker.broker_id and response.port == broker.port
        elif api == ApiKey.DESCRIBE_GROUPS:
            assert response.groups[0].group_state == "Dead"
        elif api == ApiKey.LIST_GROUPS:
            assert response.error_code == ErrorCode.none
        else:
            assert response.results[0].error_code == ErrorCode.group_id_not_found


@pytest.mark.both_encodings
def test_offset_commit_and_fetch_every_version(broker) -> None:
    from tests.clients import Rec, confluent_produce

    confluent_produce(broker.bootstrap, "oc", [Rec(None, b"x")])
    low, high = SUPPORTED_VERSIONS[ApiKey.OFFSET_COMMIT]
    topic_id = broker.call(broker.broker.ctx.topics.load("oc")).id
    for version in range(low, high + 1):
        cls = request_type(ApiKey.OFFSET_COMMIT, version)
        topic_cls = sibling(cls, "OffsetCommitRequestTopic")
        part_cls = sibling(cls, "OffsetCommitRequestPartition")
        partition = make(
            part_cls, partition_index=0, committed_offset=100 + version, committed_leader_epoch=0,
            committed_metadata=f"meta{version}",
        )  # fmt: skip
        body = make(
            cls,
            group_id=f"oc{version}",
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=(make(topic_cls, name="oc", topic_id=topic_id, partitions=(partition,)),),
        )
        committed = call(broker.port, body)
        assert committed.topics[0].partitions[0].error_code == ErrorCode.none, version
    flow, fhigh = SUPPORTED_VERSIONS[ApiKey.OFFSET_FETCH]
    for version in range(flow, fhigh + 1):
        cls = request_type(ApiKey.OFFSET_FETCH, version)
        group = f"oc{min(max(version, low), high)}"
        if version >= 8:
            g_cls = sibling(cls, "OffsetFetchRequestGroup")
            t_cls = sibling(cls, "OffsetFetchRequestTopics")
            topic = make(t_cls, name="oc", topic_id=topic_id, partition_indexes=(0,))
            body = make(
                cls,
                groups=(make(g_cls, group_id=group, member_id=None, member_epoch=-1, topics=(topic,)),),
                require_stable=False,
            )
            part = call(broker.port, body).groups[0].topics[0].partitions[0]
        else:
            t_cls = sibling(cls, "OffsetFetchRequestTopic")
            body = make(
                cls,
                group_id=group,
                topics=(make(t_cls, name="oc", partition_indexes=(0,)),),
                require_stable=False,
            )
            part = call(broker.port, body).topics[0].partitions[0]
        expected = 100 + min(max(version, low), high)
        assert (part.committed_offset, part.metadata) == (expected, f"meta{expected - 100}"), version
