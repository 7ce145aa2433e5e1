"""The KIP-932 coordinator driven in-process (GroupCoordinator.share, the broker's ctx.groups.share)
against a real redis-server: members sharing partitions with no revocation, epochs and fencing, a group
id's kind, sessions, and takeover by another broker. No sockets."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from schooner.coordinators.groups.consumer.coordinator import Heartbeat
from schooner.coordinators.groups.coordinator import GroupCoordinator, NotCoordinator
from schooner.coordinators.groups.modern.coordinator import HeartbeatAnswer, MemberTimeouts, Refusal
from schooner.coordinators.groups.modern.group import JOIN_EPOCH, LEAVE_EPOCH
from schooner.coordinators.groups.share.coordinator import ShareHeartbeat
from schooner.coordinators.groups.share.group import ShareGroup
from schooner.storage.keys import Keyspace
from schooner.storage.topic_partition import TopicPartition
from tests.coordinators.helpers import TIMEOUTS, RedisTopics, broker, coordinator, join_request


def _hb(member: str, epoch: int, group: str = "g", topics: tuple[str, ...] | None = None) -> ShareHeartbeat:
    """A heartbeat; joining (epoch 0) it sends the subscription to "t" unless told otherwise."""
    if topics is None and epoch == JOIN_EPOCH:
        topics = ("t",)
    return ShareHeartbeat(group, member, epoch, None, topics, "client", "host")


async def _beat(
    groups: GroupCoordinator, topics: RedisTopics, hb: ShareHeartbeat, timeouts: MemberTimeouts = TIMEOUTS
) -> HeartbeatAnswer:
    return await groups.share.heartbeat(hb, topics, timeouts)


def test_members_share_one_partition_and_take_new_assignments_at_once(redis_server, keyspace) -> None:
    asyncio.run(_sharing(redis_server.url, Keyspace(keyspace)))


async def _sharing(url: str, ks: Keyspace) -> None:
    topics = RedisTopics(url, ks)
    one = str((await topics.create("t", 1)).id)
    four = str((await topics.create("f", 4)).id)
    async with coordinator(url, ks, broker(1)) as groups:
        a = await _beat(groups, topics, _hb("a", JOIN_EPOCH))
        assert (a.error, a.member_id, a.member_epoch, a.assignment) == (ErrorCode.none, "a", 1, {one: {0}})
        b = await _beat(groups, topics, _hb("b", JOIN_EPOCH))
        assert (b.member_epoch, b.assignment) == (2, {one: {0}}), "b reads the partition a reads"
        again = await _beat(groups, topics, _hb("a", 1))
        assert (again.member_epoch, again.assignment) == (2, None), (
            "a moves on; its partitions did not change"
        )

        # Four partitions: a newcomer gets its half at once, nothing waits for a revocation.
        x = await _beat(groups, topics, _hb("x", JOIN_EPOCH, group="h", topics=("f",)))
        assert x.assignment == {four: {0, 1, 2, 3}}
        y = await _beat(groups, topics, _hb("y", JOIN_EPOCH, group="h", topics=("f",)))
        assert y.member_epoch == 2 and y.assignment is not None and len(y.assignment[four]) == 2
        x2 = await _beat(groups, topics, _hb("x", 1, group="h"))
        assert x2.member_epoch == 2 and x2.assignment == {four: {0, 1, 2, 3} - y.assignment[four]}

        # Leaving: the others get its partitions at their next heartbeat.
        left = await _beat(groups, topics, _hb("y", LEAVE_EPOCH, group="h"))
        assert (left.error, left.member_id, left.member_epoch) == (ErrorCode.none, "y", LEAVE_EPOCH)
        x3 = await _beat(groups, topics, _hb("x", 2, group="h"))
        assert (x3.member_epoch, x3.assignment) == (3, {four: {0, 1, 2, 3}})
        gone = await _beat(groups, topics, _hb("y", 2, group="h"))
        assert gone.error == ErrorCode.unknown_member_id

        # A subscription change, and a topic that grows, each make a new epoch.
        moved = await _beat(groups, topics, _hb("x", 3, group="h", topics=("f", "t")))
        assert (moved.member_epoch, moved.assignment) == (4, {four: {0, 1, 2, 3}, one: {0}})
    await topics.aclose()


def test_epochs_fence_members_and_a_known_member_may_rejoin(redis_server, keyspace) -> None:
    asyncio.run(_epochs(redis_server.url, Keyspace(keyspace)))


async def _epochs(url: str, ks: Keyspace) -> None:
    topics = RedisTopics(url, ks)
    tid = str((await topics.create("t", 1)).id)
    async with coordinator(url, ks, broker(1)) as groups:
        await _beat(groups, topics, _hb("a", JOIN_EPOCH))
        await _beat(groups, topics, _hb("b", JOIN_EPOCH))
        ahead = await _beat(groups, topics, _hb("b", 3))
        assert (ahead.error, ahead.member_id, ahead.member_epoch) == (ErrorCode.fenced_member_epoch, "b", 3)
        assert "member epoch (3)" in (ahead.message or "")
        assert (await _beat(groups, topics, _hb("a", 2))).error == ErrorCode.fenced_member_epoch
        assert (await _beat(groups, topics, _hb("a", 1))).member_epoch == 2
        previous = await _beat(groups, topics, _hb("a", 1))  # the answer that moved it on was lost
        assert (previous.error, previous.member_epoch) == (ErrorCode.none, 2)
        behind = await _beat(groups, topics, _hb("a", JOIN_EPOCH))  # a known member rejoins
        assert (behind.error, behind.member_epoch, behind.assignment) == (ErrorCode.none, 2, {tid: {0}})
        stranger = await _beat(groups, topics, _hb("z", 2))
        assert (stranger.error, stranger.message) == (
            ErrorCode.unknown_member_id,
            "Member z is not a member of group g.",
        )
        groups.share.max_size = 2
        full = await _beat(groups, topics, _hb("c", JOIN_EPOCH))
        assert full.error == ErrorCode.group_max_size_reached
        assert (await _beat(groups, topics, _hb("a", JOIN_EPOCH))).error == ErrorCode.none, "a member"
    await topics.aclose()


@pytest.mark.parametrize(
    ("hb", "message"),
    [
        (ShareHeartbeat("g", "", 0, None, ("t",)), "MemberId can't be empty."),
        (ShareHeartbeat("g", "  ", 1, None, None), "MemberId can't be empty."),
        (ShareHeartbeat("", "m", 0, None, ("t",)), "GroupId can't be empty."),
        (ShareHeartbeat("g", "m", 0, " ", ("t",)), "RackId can't be empty."),
        (ShareHeartbeat("g", "m", 0, None, None), "SubscribedTopicNames must be set in first request."),
        (ShareHeartbeat("g", "m", 0, None, ()), "SubscribedTopicNames must be set in first request."),
        (ShareHeartbeat("g", "m", -2, None, None), "MemberEpoch is invalid."),
    ],
)
def test_malformed_heartbeats_are_invalid_requests(redis_server, keyspace, hb, message) -> None:
    async def run() -> HeartbeatAnswer:
        topics = RedisTopics(redis_server.url, Keyspace(keyspace))
        async with coordinator(redis_server.url, Keyspace(keyspace), broker(1)) as groups:
            answer = await _beat(groups, topics, hb)
            assert groups.loaded(hb.group_id) is None, "nothing was claimed"
        await topics.aclose()
        return answer

    answer = asyncio.run(run())
    assert (answer.error, answer.message) == (ErrorCode.invalid_request, message)


def test_a_group_id_is_one_kind_and_a_share_group_stays_one(redis_server, keyspace) -> None:
    asyncio.run(_kinds(redis_server.url, Keyspace(keyspace)))


async def _kinds(url: str, ks: Keyspace) -> None:
    topics = RedisTopics(url, ks)
    await topics.create("t", 1)
    async with coordinator(url, ks, broker(1)) as groups:
        consumer = Heartbeat("c", "m", 0, None, None, 60_000, ("t",), None, None, {})
        assert (await groups.consumer.heartbeat(consumer, topics, TIMEOUTS)).error == ErrorCode.none
        assert (await groups.join(join_request(group_id="k"))).error == ErrorCode.none
        owner = await groups.owner("o")
        await groups.ownership.store.commit_offsets("o", owner, {TopicPartition("t", 0): (5, -1, None)})
        for group_id in ("c", "k", "o"):
            refused = await _beat(groups, topics, _hb("s", JOIN_EPOCH, group=group_id))
            assert (refused.error, refused.message) == (
                ErrorCode.group_id_not_found,
                f"Group {group_id} is not a share group.",
            )
            assert await groups.share.find(group_id) == refused_as(refused)
        unknown = await _beat(groups, topics, _hb("s", 1, group="new"))
        assert (unknown.error, unknown.message) == (
            ErrorCode.group_id_not_found,
            "Share group new not found.",
        )
        assert await groups.share.find("nothing") == Refusal(
            ErrorCode.group_id_not_found, "Group nothing not found."
        )

        # An empty share group stays a share group: the other protocols are refused.
        assert (await _beat(groups, topics, _hb("s", JOIN_EPOCH, group="s"))).error == ErrorCode.none
        assert (await _beat(groups, topics, _hb("s", LEAVE_EPOCH, group="s"))).error == ErrorCode.none
        share = await groups.find("s")
        assert isinstance(share, ShareGroup) and not share.members
        joined = await groups.join(join_request(group_id="s"))
        assert joined.error == ErrorCode.inconsistent_group_protocol
        kip848 = await groups.consumer.heartbeat(
            Heartbeat("s", "m", 0, None, None, 60_000, ("t",), None, None, {}), topics, TIMEOUTS
        )
        assert (kip848.error, kip848.message) == (
            ErrorCode.group_id_not_found,
            "Group s is not a consumer group.",
        )
        assert await groups.heartbeat("s", 1, "m", None) == ErrorCode.unknown_member_id
        assert await groups.check_commit("s", -1, "", None) == ErrorCode.group_id_not_found
        assert await groups.check_fetch("s", "s", 1) == ErrorCode.none
        assert isinstance(await groups.find("s"), ShareGroup)
    await topics.aclose()


def refused_as(answer: HeartbeatAnswer) -> Refusal:
    return Refusal(answer.error, answer.message or "")


def test_a_silent_member_expires_and_the_group_survives_a_new_coordinator(redis_server, keyspace) -> None:
    asyncio.run(_sessions(redis_server.url, Keyspace(keyspace)))


async def _sessions(url: str, ks: Keyspace) -> None:
    topics = RedisTopics(url, ks)
    tid = str((await topics.create("t", 2)).id)
    short = MemberTimeouts(session_ms=100, heartbeat_ms=50)
    async with coordinator(url, ks, broker(1)) as groups:
        await _beat(groups, topics, _hb("a", JOIN_EPOCH))
        await _beat(groups, topics, _hb("b", JOIN_EPOCH), short)
        halved = await _beat(groups, topics, _hb("a", 1))
        assert halved.member_epoch == 2 and halved.assignment is not None and len(halved.assignment[tid]) == 1
        await asyncio.sleep(0.2)
        await groups.expire_sessions()
        group = await groups.find("g")
        assert isinstance(group, ShareGroup) and list(group.members) == ["a"]
        assert (group.group_epoch, group.members["a"].target) == (3, {tid: {0, 1}})
        assert (await _beat(groups, topics, _hb("a", 2))).assignment == {tid: {0, 1}}

    async with coordinator(url, ks, broker(1)) as old, coordinator(url, ks, broker(2)) as new:
        assert (await _beat(old, topics, _hb("a", 3))).member_epoch == 3
        taken = await _beat(new, topics, _hb("a", 3))  # each believes it is the only live broker
        assert (taken.error, taken.member_epoch) == (ErrorCode.none, 3), "members and epochs survive"
        with pytest.raises(NotCoordinator):
            await _beat(old, topics, _hb("a", 3))
        assert old.loaded("g") is None
    await topics.aclose()
