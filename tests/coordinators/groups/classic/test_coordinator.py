"""The classic coordinator driven in-process (GroupCoordinator, the broker's ctx.groups) against a real
redis-server: waiting joins and syncs, the rebalance timer, fenced saves, takeover by another broker,
and find(). No sockets; each broker's coordinator is told which brokers are alive."""

from __future__ import annotations

import asyncio
import time

import pytest
from kio.schema.errors import ErrorCode

from schooner.coordinators.groups.classic.group import Group, GroupState
from schooner.coordinators.groups.coordinator import GroupCoordinator, GroupSettings, NotCoordinator
from schooner.storage.keys import Keyspace
from tests.coordinators.helpers import broker, coordinator, join_request, sees

# A new group waits this long for its first members, so that two joins land in one generation.
GATHER = GroupSettings(min_session_ms=10, max_session_ms=60_000, initial_rebalance_delay_ms=200)


async def _generation_one(groups: GroupCoordinator, rebalance_ms: int = 5_000) -> tuple[str, str]:
    """Two members join a new group "g" together; (leader, follower) of generation 1."""
    first, second = await asyncio.gather(
        groups.join(join_request(rebalance_ms=rebalance_ms)),
        groups.join(join_request(rebalance_ms=rebalance_ms)),
    )
    assert (first.error, second.error) == (ErrorCode.none, ErrorCode.none)
    assert first.generation == second.generation == 1 and first.leader == second.leader
    leader = first if first.member_id == first.leader else second
    follower = second if leader is first else first
    assert sorted(m for m, _, _ in leader.members) == sorted([first.member_id, second.member_id])
    assert follower.members == [], "only the leader learns the subscriptions"
    return leader.member_id, follower.member_id


async def _parked(groups: GroupCoordinator, kind: str, group_id: str = "g") -> None:
    """Until a request made as a task ("joins" or "syncs") waits on the group: it gets there only after
    its round trips to Redis, which a busy machine can make longer than any fixed pause."""
    deadline = time.monotonic() + 10
    while not getattr(groups.classic._waiting.get(group_id), kind, None):
        assert time.monotonic() < deadline, f"no {kind} wait on {group_id}"
        await asyncio.sleep(0.01)


def test_a_follower_sync_waits_for_the_leader_and_a_new_coordinator_finds_the_group_saved(
    redis_server, keyspace
) -> None:
    asyncio.run(_sync_and_takeover(redis_server.url, Keyspace(keyspace)))


async def _sync_and_takeover(url: str, ks: Keyspace) -> None:
    async with coordinator(url, ks, broker(1), settings=GATHER) as groups:
        leader, follower = await _generation_one(groups)
        waiting = asyncio.create_task(groups.sync("g", 1, follower, None, {}))
        await _parked(groups, "syncs")
        assert not waiting.done(), "a follower's SyncGroup waits for the leader's"
        mine = await groups.sync("g", 1, leader, None, {leader: b"to-leader", follower: b"to-follower"})
        assert (mine.error, mine.assignment) == (ErrorCode.none, b"to-leader")
        theirs = await asyncio.wait_for(waiting, 1)
        assert (theirs.error, theirs.assignment) == (ErrorCode.none, b"to-follower")
        assert await groups.heartbeat("g", 1, follower, None) == ErrorCode.none

        # Broker 2 believes it is alone now: it claims the group and finds it as saved.
        async with coordinator(url, ks, broker(2)) as other:
            group = await other.find("g")
            assert isinstance(group, Group)
            assert (group.state, group.generation, group.leader) == (GroupState.STABLE, 1, leader)
            assert group.members[follower].assignment == b"to-follower"
            # Broker 1 still thinks the group is its own, but its next save is fenced.
            with pytest.raises(NotCoordinator):
                await groups.leave("g", [(follower, None)])
            assert groups.loaded("g") is None, "a fenced coordinator drops the group"
            assert follower in group.members


def test_a_coordinator_taking_over_mid_rebalance_restarts_it(redis_server, keyspace) -> None:
    asyncio.run(_takeover_mid_rebalance(redis_server.url, Keyspace(keyspace)))


async def _takeover_mid_rebalance(url: str, ks: Keyspace) -> None:
    async with coordinator(url, ks, broker(1), settings=GATHER) as groups:
        leader, follower = await _generation_one(groups)  # saved as CompletingRebalance
        waiting = asyncio.create_task(groups.sync("g", 1, follower, None, {}))
        await _parked(groups, "syncs")
        async with coordinator(url, ks, broker(2), settings=GATHER) as other:
            group = await other.find("g")
            assert isinstance(group, Group) and group.state == GroupState.PREPARING_REBALANCE
            with pytest.raises(NotCoordinator):  # the old coordinator's save is fenced...
                await groups.sync("g", 1, leader, None, {leader: b"", follower: b""})
            # ...and the follower waiting there is sent to find the new one.
            assert (await asyncio.wait_for(waiting, 1)).error == ErrorCode.not_coordinator
            # Both rejoin the new coordinator: it completes as soon as the last one is in.
            started = time.monotonic()
            again = await asyncio.gather(other.join(join_request(leader)), other.join(join_request(follower)))
            assert time.monotonic() - started < 0.8, "no waiting once the last member is in"
            assert [(r.error, r.generation, r.leader) for r in again] == [(ErrorCode.none, 2, leader)] * 2


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_dropped(redis_server, keyspace) -> None:
    asyncio.run(_silent_member_dropped(redis_server.url, Keyspace(keyspace)))


async def _silent_member_dropped(url: str, ks: Keyspace) -> None:
    async with coordinator(url, ks, broker(1), settings=GATHER) as groups:
        leader, follower = await _generation_one(groups, rebalance_ms=300)
        await groups.sync("g", 1, leader, None, {})
        started = time.monotonic()
        changed = join_request(follower, rebalance_ms=300, protocols=(("roundrobin", b""), ("range", b"")))
        result = await asyncio.wait_for(groups.join(changed), 2)
        assert 0.25 <= time.monotonic() - started < 1, "the leader had its rebalance timeout to rejoin"
        assert (result.generation, result.leader, result.protocol_name) == (2, follower, "roundrobin")
        assert [m for m, _, _ in result.members] == [follower]
        assert await groups.heartbeat("g", 2, leader, None) == ErrorCode.unknown_member_id


def test_shutdown_sends_waiting_joins_to_the_next_coordinator(redis_server, keyspace) -> None:
    asyncio.run(_shutdown_answers(redis_server.url, Keyspace(keyspace)))


async def _shutdown_answers(url: str, ks: Keyspace) -> None:
    slow = GroupSettings(min_session_ms=10, max_session_ms=60_000, initial_rebalance_delay_ms=5_000)
    async with coordinator(url, ks, broker(1), settings=slow) as groups:
        waiting = asyncio.create_task(groups.join(join_request()))
        await _parked(groups, "joins")
        assert not waiting.done(), "a new group waits out its initial delay"
        groups.shutdown()
        assert (await asyncio.wait_for(waiting, 1)).error == ErrorCode.not_coordinator
        with pytest.raises(NotCoordinator):
            await groups.heartbeat("g", 0, "anyone", None)


def test_a_request_that_waited_for_a_dropped_group_is_sent_elsewhere(redis_server, keyspace) -> None:
    asyncio.run(_dropped_while_waiting(redis_server.url, Keyspace(keyspace)))


async def _dropped_while_waiting(url: str, ks: Keyspace) -> None:
    async with coordinator(url, ks, broker(1), settings=GATHER) as groups:
        leader, _ = await _generation_one(groups)
        group = await groups.group("g")
        async with group.lock:
            heartbeat = asyncio.create_task(groups.heartbeat("g", 1, leader, None))
            await asyncio.sleep(0.05)
            groups.unload("g")  # e.g. the live broker set changed meanwhile
        with pytest.raises(NotCoordinator):
            await heartbeat


def test_find_tells_unknown_groups_from_groups_another_broker_coordinates(redis_server, keyspace) -> None:
    asyncio.run(_find(redis_server.url, Keyspace(keyspace)))


async def _find(url: str, ks: Keyspace) -> None:
    one, two = broker(1), broker(2)
    async with (
        coordinator(url, ks, one, sees(one, two)) as first,
        coordinator(url, ks, two, sees(one, two)) as second,
    ):
        ids = [f"group-{i}" for i in range(20)]
        owners = {g: (await first.coordinator_for(g)).broker_id for g in ids}
        mine = next(g for g in ids if owners[g] == 1)
        assert await first.find(mine) is None
        assert await first.find(mine) is None and first.loaded(mine) is None, "looking creates nothing"
        assert await second.find(mine) is None, "an unknown group is unknown on every broker"

        joined = await first.join(join_request(group_id=mine))
        assert joined.error == ErrorCode.none
        found = await first.find(mine)
        assert isinstance(found, Group) and joined.member_id in found.members
        assert first.loaded(mine) is found
        with pytest.raises(NotCoordinator):
            await second.find(mine)
