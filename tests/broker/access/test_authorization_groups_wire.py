"""ACL enforcement of the group and transaction APIs over raw kio requests: each request is sent once without
ACLs (the denial code lands where Kafka puts it) and once with the grant it needs, when it gets past
authorization to the coordinator's own answer (which for these made-up members is an error of its own).

The principal is User:ANONYMOUS (a PLAINTEXT connection; tests/broker/acl_rig.py).
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from schooner.protocol.apis import ApiKey
from schooner.security.acls import operations_bits
from tests.broker.acl_rig import (
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
    grant,
    nested,
    partitions_of,
    request,
    secure,
    top,
)

SECOND = datetime.timedelta(seconds=1)
G = "g"  # the group of every case; "w" is the topic, "tx" the transactional id


def both(*grants: Any) -> Any:
    def apply(s: Secured) -> None:
        for g in grants:
            g(s)

    return apply


def _offset_delete() -> Any:
    part = nested(ApiKey.OFFSET_DELETE, 0, "OffsetDeleteRequestPartition", partition_index=0)
    t = nested(ApiKey.OFFSET_DELETE, 0, "OffsetDeleteRequestTopic", name="w", partitions=(part,))
    return request(ApiKey.OFFSET_DELETE, 0, group_id=G, topics=(t,))


def _add_partitions() -> Any:
    t = nested(ApiKey.ADD_PARTITIONS_TO_TXN, 3, "AddPartitionsToTxnTopic", name="w", partitions=(0,))
    return request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, v3_and_below_transactional_id="tx",
                   v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
                   v3_and_below_topics=(t,))  # fmt: skip


def _txn_offset_commit() -> Any:
    part = nested(ApiKey.TXN_OFFSET_COMMIT, 4, "TxnOffsetCommitRequestPartition", partition_index=0,
                  committed_offset=1, committed_leader_epoch=-1, committed_metadata=None)  # fmt: skip
    t = nested(ApiKey.TXN_OFFSET_COMMIT, 4, "TxnOffsetCommitRequestTopic", name="w", partitions=(part,))
    return request(ApiKey.TXN_OFFSET_COMMIT, 4, transactional_id="tx", group_id=G, producer_id=1,
                   producer_epoch=0, generation_id=-1, member_id="", group_instance_id=None,
                   topics=(t,))  # fmt: skip


def _share_offsets(api: int, version: int, **group_fields: Any) -> Any:
    return request(api, version, **group_fields)


def _describe_share_offsets() -> Any:
    t = nested(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, "DescribeShareGroupOffsetsRequestTopic",
               topic_name="w", partitions=(0,))  # fmt: skip
    g = nested(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, "DescribeShareGroupOffsetsRequestGroup", group_id=G,
               topics=(t,))  # fmt: skip
    return request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=(g,))


def _alter_share_offsets() -> Any:
    part = nested(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, "AlterShareGroupOffsetsRequestPartition",
                  partition_index=0, start_offset=0)  # fmt: skip
    t = nested(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, "AlterShareGroupOffsetsRequestTopic", topic_name="w",
               partitions=(part,))  # fmt: skip
    return request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id=G, topics=(t,))


def _delete_share_offsets() -> Any:
    t = nested(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, "DeleteShareGroupOffsetsRequestTopic", topic_name="w")
    return request(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id=G, topics=(t,))


def _share_fetch() -> Any:
    return request(ApiKey.SHARE_FETCH, 1, group_id=G, member_id=str(uuid.uuid4()), share_session_epoch=0,
                   max_wait=SECOND * 0, min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10,
                   topics=(), forgotten_topics_data=())  # fmt: skip


def _share_acknowledge() -> Any:
    return request(ApiKey.SHARE_ACKNOWLEDGE, 1, group_id=G, member_id=str(uuid.uuid4()),
                   share_session_epoch=1, topics=())  # fmt: skip


def _sync() -> Any:
    return request(ApiKey.SYNC_GROUP, 5, group_id=G, generation_id=1, member_id="m", group_instance_id=None,
                   protocol_type="consumer", protocol_name="range", assignments=())  # fmt: skip


def _leave() -> Any:
    member = nested(
        ApiKey.LEAVE_GROUP, 5, "MemberIdentity", member_id="m", group_instance_id=None, reason=None
    )
    return request(ApiKey.LEAVE_GROUP, 5, group_id=G, members=(member,))


def txn_partitions(r: Any) -> list[ErrorCode]:
    return [p.partition_error_code for t in r.results_by_topic_v3_and_below for p in t.results_by_partition]


def groups_of(r: Any) -> list[ErrorCode]:
    return [g.error_code for g in r.groups]


CASES: dict[str, Case] = {
    "Heartbeat READ group": Case(
        lambda: request(ApiKey.HEARTBEAT, 4, group_id=G, generation_id=1, member_id="m",
                        group_instance_id=None),
        top, grant(GROUP, Op.READ, name=G), [GROUP_DENIED], [ErrorCode.unknown_member_id]),
    "SyncGroup READ group": Case(_sync, top, grant(GROUP, Op.READ, name=G), [GROUP_DENIED],
                                 [ErrorCode.unknown_member_id]),
    "LeaveGroup READ group": Case(_leave, top, grant(GROUP, Op.READ, name=G), [GROUP_DENIED], [OK]),
    "DescribeGroups DESCRIBE group": Case(
        lambda: request(ApiKey.DESCRIBE_GROUPS, 5, groups=(G,), include_authorized_operations=True),
        lambda r: [*groups_of(r), *[g.authorized_operations for g in r.groups]],
        grant(GROUP, Op.DESCRIBE, name=G), [GROUP_DENIED, -2147483648], [OK, operations_bits([Op.DESCRIBE])]),
    "ConsumerGroupDescribe DESCRIBE group": Case(
        lambda: request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=(G,),
                        include_authorized_operations=True),
        lambda r: [*groups_of(r), *[g.authorized_operations for g in r.groups]],
        grant(GROUP, Op.READ, name=G), [GROUP_DENIED, -2147483648],
        [ErrorCode.group_id_not_found, operations_bits([Op.READ, Op.DESCRIBE])]),
    "ShareGroupDescribe DESCRIBE group": Case(
        lambda: request(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=(G,), include_authorized_operations=False),
        groups_of, grant(GROUP, Op.DESCRIBE, name=G), [GROUP_DENIED], [ErrorCode.group_id_not_found]),
    "OffsetDelete DELETE group": Case(_offset_delete, top, grant(GROUP, Op.DELETE, name=G), [GROUP_DENIED],
                                      [OK]),
    "ShareFetch READ group": Case(_share_fetch, top, grant(GROUP, Op.READ, name=G), [GROUP_DENIED], [OK]),
    "ShareAcknowledge READ group": Case(_share_acknowledge, top, grant(GROUP, Op.READ, name=G),
                                        [GROUP_DENIED], [ErrorCode.share_session_not_found]),
    "DescribeShareGroupOffsets DESCRIBE group and topic": Case(
        _describe_share_offsets, lambda r: [*groups_of(r), *partitions_of("topics")(r.groups[0])],
        both(grant(GROUP, Op.DESCRIBE, name=G), grant(TOPIC, Op.DESCRIBE)), [GROUP_DENIED], [OK, OK]),
    "DescribeShareGroupOffsets, the topic denied": Case(
        _describe_share_offsets, lambda r: [*groups_of(r), *partitions_of("topics")(r.groups[0])],
        grant(GROUP, Op.DESCRIBE, name=G), [GROUP_DENIED], [OK, TOPIC_DENIED]),
    "AlterShareGroupOffsets READ group and topic": Case(
        _alter_share_offsets, lambda r: [r.error_code, *partitions_of("responses")(r)],
        both(grant(GROUP, Op.READ, name=G), grant(TOPIC, Op.READ)), [GROUP_DENIED], [OK, OK]),
    "AlterShareGroupOffsets, the topic denied": Case(
        _alter_share_offsets, lambda r: [r.error_code, *partitions_of("responses")(r)],
        grant(GROUP, Op.READ, name=G), [GROUP_DENIED], [OK, TOPIC_DENIED]),
    "DeleteShareGroupOffsets DELETE group, READ topic": Case(
        _delete_share_offsets, lambda r: [r.error_code, *[t.error_code for t in r.responses]],
        grant(GROUP, Op.DELETE, name=G), [GROUP_DENIED], [OK, TOPIC_DENIED]),
    "AddPartitionsToTxn WRITE transactional id": Case(
        _add_partitions, txn_partitions,
        both(grant(TXN, Op.WRITE, name="tx"), grant(TOPIC, Op.WRITE)), [TXN_DENIED],
        [ErrorCode.invalid_producer_id_mapping]),
    "AddPartitionsToTxn, the topic denied": Case(
        _add_partitions, txn_partitions,
        grant(TXN, Op.WRITE, name="tx"), [TXN_DENIED], [TOPIC_DENIED]),
    "AddOffsetsToTxn WRITE transactional id, READ group": Case(
        lambda: request(ApiKey.ADD_OFFSETS_TO_TXN, 4, transactional_id="tx", producer_id=1, producer_epoch=0,
                        group_id=G),
        top, grant(TXN, Op.WRITE, name="tx"), [TXN_DENIED], [GROUP_DENIED]),
    "EndTxn WRITE transactional id": Case(
        lambda: request(ApiKey.END_TXN, 4, transactional_id="tx", producer_id=1, producer_epoch=0,
                        committed=True),
        top, grant(TXN, Op.WRITE, name="tx"), [TXN_DENIED], [ErrorCode.invalid_producer_id_mapping]),
    "TxnOffsetCommit WRITE id, READ group, READ topic": Case(
        _txn_offset_commit, partitions_of("topics"), both(grant(TXN, Op.WRITE, name="tx"),
                                                            grant(GROUP, Op.READ, name=G)),
        [TXN_DENIED], [TOPIC_DENIED]),
}  # fmt: skip


@pytest.fixture
def secured(broker_factory: Any) -> Secured:
    s = secure(broker_factory)
    s.topic("w")
    return s


@pytest.mark.parametrize("name", sorted(CASES))
def test_denied_then_allowed(secured: Secured, name: str) -> None:
    CASES[name].check(secured)
