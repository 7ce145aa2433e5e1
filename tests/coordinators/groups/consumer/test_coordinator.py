"""The KIP-848 coordinator driven in-process (through GroupCoordinator, the broker's ctx.groups) against
a real redis-server: reconciliation between two members, static members' fencing, a group id changing
kind, offset checks, and takeover by another broker. No sockets."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from schooner.coordinators.groups.consumer.coordinator import Heartbeat
from schooner.coordinators.groups.consumer.group import STATIC_LEAVE_EPOCH, ConsumerGroup
from schooner.coordinators.groups.coordinator import GroupCoordinator, NotCoordinator
from schooner.coordinators.groups.modern.coordinator import HeartbeatAnswer
from schooner.coordinators.groups.modern.group import JOIN_EPOCH, LEAVE_EPOCH, Assignment
from schooner.storage.keys import Keyspace
from tests.coordinators.helpers import TIMEOUTS, RedisTopics, broker, coordinator, join_request

PARTITIONS = 4


def _hb(
    member_id: str,
    epoch: int,
    owned: Assignment | None = None,
    instance_id: str | None = None,
) -> Heartbeat:
    """A heartbeat; joining (epoch 0) it sends the full subscription, else only what it owns."""
    joining = epoch == JOIN_EPOCH
    return Heartbeat(
        group_id="g",
        member_id=member_id,
        member_epoch=epoch,
        instance_id=instance_id,
        rack_id=None,
        rebalance_ms=30_000 if joining else -1,
        subscribed=("t",) if joining else None,
        regex=None,
        assignor=None,
        owned={} if joining else owned,
    )


async def _beat(groups: GroupCoordinator, topics: RedisTopics, hb: Heartbeat) -> HeartbeatAnswer:
    return await groups.consumer.heartbeat(hb, topics, TIMEOUTS)


def _count(assignment: Assignment | None) -> int:
    return sum(len(ps) for ps in (assignment or {}).values())


def test_a_partition_moves_only_once_its_owner_has_given_it_up(redis_server, keyspace) -> None:
    asyncio.run(_reconcile(redis_server.url, Keyspace(keyspace)))


async def _reconcile(url: str, ks: Keyspace) -> None:
    topics = RedisTopics(url, ks)
    topic = await topics.create("t", PARTITIONS)
    everything = {str(topic.id): set(range(PARTITIONS))}
    async with coordinator(url, ks, broker(1)) as groups:
        first = await _beat(groups, topics, _hb("m1", JOIN_EPOCH))
        assert (first.error, first.member_epoch, first.assignment) == (ErrorCode.none, 1, everything)

        second = await _beat(groups, topics, _hb("m2", JOIN_EPOCH))
        assert second.member_epoch == 2 and second.assignment == {}, "m1 still holds every partition"
        told = await _beat(groups, topics, _hb("m1", 1, owned=everything))
        assert told.member_epoch == 1 and _count(told.assignment) == 2, "m1 is asked to give two up"
        still = await _beat(groups, topics, _hb("m2", 2, owned={}))
        assert still.assignment is None, "nothing for m2 until m1 confirms"
        kept = told.assignment
        done = await _beat(groups, topics, _hb("m1", 1, owned=kept))
        assert done.member_epoch == 2 and done.assignment is None, "m1 moves on, keeping what it has"
        given = await _beat(groups, topics, _hb("m2", 2, owned={}))
        assert given.assignment is not None and _count(given.assignment) == 2
        assert kept is not None and not set(given.assignment[str(topic.id)]) & kept[str(topic.id)]

        # Commits and fetches are fenced by the member epoch.
        assert await groups.check_commit("g", 2, "m1", None, version=9) == ErrorCode.none
        assert await groups.check_commit("g", 1, "m1", None, version=9) == ErrorCode.stale_member_epoch
        assert await groups.check_commit("g", 2, "m1", None, version=8) == ErrorCode.unsupported_version
        assert await groups.check_fetch("g", "m2", 1) == ErrorCode.stale_member_epoch
        assert await groups.check_fetch("g", "m2", 2) == ErrorCode.none
        assert await groups.check_fetch("g", None, -1) == ErrorCode.none
        fenced = await _beat(groups, topics, _hb("m2", 3, owned={}))
        assert fenced.error == ErrorCode.fenced_member_epoch
    await topics.aclose()


def test_a_static_member_is_fenced_by_its_instance_id_and_steps_back_in_keeping_its_partitions(
    redis_server, keyspace
) -> None:
    asyncio.run(_static_members(redis_server.url, Keyspace(keyspace)))


async def _static_members(url: str, ks: Keyspace) -> None:
    topics = RedisTopics(url, ks)
    topic = await topics.create("t", PARTITIONS)
    everything = {str(topic.id): set(range(PARTITIONS))}
    async with coordinator(url, ks, broker(1)) as groups:
        joined = await _beat(groups, topics, _hb("m1", JOIN_EPOCH, instance_id="i1"))
        assert joined.assignment == everything
        impostor = await _beat(groups, topics, _hb("m9", 1, owned=everything, instance_id="i1"))
        assert impostor.error == ErrorCode.fenced_instance_id
        unknown = await _beat(groups, topics, _hb("m1", 1, owned=everything, instance_id="i9"))
        assert unknown.error == ErrorCode.unknown_member_id
        wrong_leave = await _beat(groups, topics, _hb("m9", LEAVE_EPOCH, instance_id="i1"))
        assert wrong_leave.error == ErrorCode.fenced_instance_id
        too_soon = await _beat(groups, topics, _hb("m1-restarted", JOIN_EPOCH, instance_id="i1"))
        assert too_soon.error == ErrorCode.unreleased_instance_id, "m1 has not stepped out"

        stepped_out = await _beat(groups, topics, _hb("m1", STATIC_LEAVE_EPOCH, instance_id="i1"))
        assert stepped_out.error == ErrorCode.none
        back = await _beat(groups, topics, _hb("m1-restarted", JOIN_EPOCH, instance_id="i1"))
        assert (back.error, back.member_epoch, back.assignment) == (ErrorCode.none, 1, everything)
        group = await groups.find("g")
        assert isinstance(group, ConsumerGroup) and list(group.members) == ["m1-restarted"]
    await topics.aclose()


def test_a_group_id_changes_kind_only_while_empty(redis_server, keyspace) -> None:
    asyncio.run(_kind_change(redis_server.url, Keyspace(keyspace)))


async def _kind_change(url: str, ks: Keyspace) -> None:
    topics = RedisTopics(url, ks)
    await topics.create("t", PARTITIONS)
    async with coordinator(url, ks, broker(1)) as groups:
        classic = await groups.join(join_request())
        assert classic.error == ErrorCode.none
        refused = await _beat(groups, topics, _hb("m1", JOIN_EPOCH))
        assert (refused.error, refused.message) == (
            ErrorCode.group_id_not_found,
            "Group g is not a consumer group.",
        )
        assert await groups.leave("g", [(classic.member_id, None)]) == [ErrorCode.none]
        assert (await _beat(groups, topics, _hb("m1", JOIN_EPOCH))).error == ErrorCode.none
        assert isinstance(await groups.find("g"), ConsumerGroup)
        assert (await groups.join(join_request())).error == ErrorCode.inconsistent_group_protocol
        assert (await groups.sync("g", 1, classic.member_id, None, {})).error == ErrorCode.unknown_member_id
    await topics.aclose()


def test_a_coordinator_that_lost_the_group_is_fenced_and_the_new_one_keeps_the_members(
    redis_server, keyspace
) -> None:
    asyncio.run(_takeover(redis_server.url, Keyspace(keyspace)))


async def _takeover(url: str, ks: Keyspace) -> None:
    topics = RedisTopics(url, ks)
    topic = await topics.create("t", PARTITIONS)
    everything = {str(topic.id): set(range(PARTITIONS))}
    async with coordinator(url, ks, broker(1)) as old, coordinator(url, ks, broker(2)) as new:
        assert (await _beat(old, topics, _hb("m1", JOIN_EPOCH))).member_epoch == 1
        # Each believes it is the only live broker: the second claims the group in Redis.
        answer = await _beat(new, topics, _hb("m1", 1, owned=everything))
        assert (answer.error, answer.member_epoch) == (ErrorCode.none, 1)
        with pytest.raises(NotCoordinator):
            await _beat(old, topics, _hb("m1", 1, owned=everything))
        assert old.loaded("g") is None, "the fenced coordinator forgets the group"
    await topics.aclose()
