"""Classic groups: committed offsets with their metadata, the order of an OffsetCommit's checks, and the
states a group passes through in a rebalance, as Kafka answers them."""

from __future__ import annotations

import dataclasses
import datetime
import time
from typing import Any

from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v8.request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment

from tests.conformance.peers import Peer, create_topic, plain, same_answers, unique
from tests.wire import connect, encode_request, exchange, read_frame

SESSION = datetime.timedelta(seconds=30)


def commit(
    peer: Peer, group: str, topic: str, offsets: dict[int, tuple[int, str | None]], generation: int = -1,
    member: str = "",
) -> Any:  # fmt: skip
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=(
            OffsetCommitRequestTopic(
                name=topic,
                partitions=tuple(
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_metadata=m)
                    for p, (o, m) in offsets.items()
                ),
            ),
        ),
    )
    topics = plain(peer.call(request))["topics"]
    for t in topics:  # Kafka lists a topic's refused partitions first: the order carries no meaning
        t["partitions"].sort(key=lambda p: p["partition_index"])
    return topics


def fetch_offsets(peer: Peer, group: str, topic: str, partitions: tuple[int, ...] | None) -> Any:
    topics = (
        None if partitions is None else (OffsetFetchRequestTopics(name=topic, partition_indexes=partitions),)
    )
    request = OffsetFetchRequest(
        groups=(OffsetFetchRequestGroup(group_id=group, topics=topics),), require_stable=True
    )
    groups = plain(peer.call(request))["groups"]
    for t in (t for g in groups for t in g["topics"]):
        t["partitions"].sort(key=lambda p: p["partition_index"])
    return groups


def test_committed_offsets_keep_their_metadata(kafka: Peer, schooner: Peer) -> None:
    topic, group = unique("commits"), unique("group")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, topic, 3)
        return [
            fetch_offsets(peer, group, topic, (0,)),  # a group that never committed
            commit(peer, group, topic, {0: (5, "first"), 1: (7, None), 2: (0, "")}),
            fetch_offsets(peer, group, topic, (0, 1, 2, 9)),
            commit(peer, group, topic, {0: (3, "x" * 5000)}),  # metadata over offset.metadata.max.bytes
            fetch_offsets(peer, group, topic, None),  # every partition the group committed
        ]

    same_answers(scenario, kafka, schooner)


def test_offset_commit_from_outside_a_generation_checks_partitions_first(kafka: Peer, schooner: Peer) -> None:
    """The difference issue 39 names: Kafka answers UNKNOWN_TOPIC_OR_PARTITION for a partition its
    metadata lacks before it looks at the member and generation."""
    topic, group = unique("precedence"), unique("group")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, topic, 1)
        join, _ = _join_and_sync(peer, group, topic)
        stranger = commit(
            peer, group, topic, {0: (1, None), 4: (1, None)}, generation=99, member="not-a-member"
        )
        stale = commit(peer, group, topic, {0: (1, None), 4: (1, None)}, generation=join.generation_id + 1,
                       member=join.member_id)  # fmt: skip
        return stranger, stale

    same_answers(scenario, kafka, schooner)


def _join_and_sync(peer: Peer, group: str, topic: str) -> tuple[Any, Any]:
    """One member joins (twice: KIP-394 asks for a member id first) and syncs as the leader."""
    protocols = (JoinGroupRequestProtocol(name="range", metadata=_subscription(topic)),)

    def join(member_id: str) -> Any:
        return peer.call(
            JoinGroupRequest(
                group_id=group,
                session_timeout=SESSION,
                rebalance_timeout=SESSION,
                member_id=member_id,
                protocol_type="consumer",
                protocols=protocols,
            )
        )

    first = join("")
    joined = join(first.member_id)
    synced = peer.call(
        SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(SyncGroupRequestAssignment(member_id=joined.member_id, assignment=_ASSIGNMENT),),
        )
    )
    return joined, synced


_ASSIGNMENT = (
    b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"  # ConsumerProtocolAssignment v0: nothing, no user data
)


def _subscription(topic: str) -> bytes:
    """A ConsumerProtocolSubscription v0: the topics, no user data."""
    name = topic.encode()
    return b"\x00\x00" + b"\x00\x00\x00\x01" + len(name).to_bytes(2, "big") + name + b"\xff\xff\xff\xff"


def describe(peer: Peer, group: str) -> Any:
    answer = plain(peer.call(DescribeGroupsRequest(groups=(group,), include_authorized_operations=False)))
    (described,) = answer["groups"]
    members = [(bool(m["member_metadata"]), bool(m["member_assignment"])) for m in described["members"]]
    return {k: described[k] for k in ("error_code", "group_state", "protocol_type", "protocol_data")} | {
        "members": sorted(members)
    }


def test_group_states_through_a_rebalance(kafka: Peer, schooner: Peer) -> None:
    topic, group = unique("states"), unique("group")

    def scenario(peer: Peer) -> Any:
        create_topic(peer, topic, 2)
        seen = [describe(peer, group)]  # not a group yet: Dead
        joined, synced = _join_and_sync(peer, group, topic)
        seen.append(describe(peer, group))  # Stable, one member
        # A second member's join puts the group in PreparingRebalance until the first rejoins.
        with connect(peer.port) as second:
            protocols = (JoinGroupRequestProtocol(name="range", metadata=_subscription(topic)),)
            request = JoinGroupRequest(
                group_id=group, session_timeout=SESSION, rebalance_timeout=SESSION, member_id="",
                protocol_type="consumer", protocols=protocols,
            )  # fmt: skip
            (needs_id,) = exchange(second, [request])
            second.sendall(encode_request(_with_member(request, needs_id.member_id), correlation_id=7))
            _wait_for_state(peer, group, "PreparingRebalance")
            seen.append(describe(peer, group))
            rejoined = peer.call(_with_member(request, joined.member_id))
            assert read_frame(second) is not None  # the second member's join completes too
            seen.append(describe(peer, group))  # CompletingRebalance: waiting for the leader's sync
            seen.append(plain(rejoined, drop=frozenset({"members", "leader", "generation_id"})))
        return seen

    same_answers(scenario, kafka, schooner)


def _with_member(request: JoinGroupRequest, member_id: str) -> JoinGroupRequest:
    return dataclasses.replace(request, member_id=member_id)


def _wait_for_state(peer: Peer, group: str, state: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while describe(peer, group)["group_state"] != state:
        assert time.monotonic() < deadline, describe(peer, group)
        time.sleep(0.05)
