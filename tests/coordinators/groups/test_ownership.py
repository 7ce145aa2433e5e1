"""GroupOwnership's rule for requests that outlived a claim, in-process against a real redis-server: a
commit read before the broker let its group go is refused (NOT_COORDINATOR), not served by the claim made
after; while the broker's registration has lapsed it coordinates nothing, and on renewal it lets every
group go. tests/broker/handlers/groups/test_stalled_coordinator.py runs the whole story with a stopped
broker process."""

from __future__ import annotations

import asyncio
import time

import pytest
from kio.schema.errors import ErrorCode

from schooner.coordinators.groups.coordinator import GroupCoordinator, NotCoordinator
from schooner.storage.keys import Keyspace
from tests.coordinators.helpers import broker, coordinator


async def _check(groups: GroupCoordinator, received_at: float) -> ErrorCode:
    return await groups.check_commit("g", -1, "", None, 8, received_at)


def test_a_commit_read_before_the_group_was_let_go_is_refused(redis_server, keyspace) -> None:
    async def run() -> None:
        async with coordinator(redis_server.url, Keyspace(keyspace), broker(1)) as groups:
            read_before = time.monotonic()
            assert await _check(groups, read_before) == ErrorCode.none
            assert (await groups.owner("g", read_before)).broker_id == 1
            groups.unload("g")  # as after a fenced save: another broker had claimed the group
            with pytest.raises(NotCoordinator):
                await _check(groups, read_before)
            with pytest.raises(NotCoordinator):
                await groups.owner("g", read_before)
            assert groups.loaded("g") is None, "a refused request claims nothing"
            # What is read from now on is served: the broker claims the group again.
            assert await _check(groups, time.monotonic()) == ErrorCode.none
            assert groups.loaded("g") is not None

    asyncio.run(run())


def test_a_broker_whose_registration_lapsed_coordinates_nothing_until_renewed(redis_server, keyspace) -> None:
    async def run() -> None:
        async with coordinator(redis_server.url, Keyspace(keyspace), broker(1)) as groups:
            groups.registered(time.monotonic(), 0.05)
            read_before = time.monotonic()
            assert await _check(groups, read_before) == ErrorCode.none
            await asyncio.sleep(0.1)  # the registration lapses: the others count this broker gone
            with pytest.raises(NotCoordinator):
                await _check(groups, time.monotonic())
            assert groups.loaded("g") is None
            groups.registered(time.monotonic(), 5.0)
            with pytest.raises(NotCoordinator):
                await _check(groups, read_before)
            assert await _check(groups, time.monotonic()) == ErrorCode.none

    asyncio.run(run())


def test_renewing_after_a_lapse_lets_held_groups_go(redis_server, keyspace) -> None:
    async def run() -> None:
        async with coordinator(redis_server.url, Keyspace(keyspace), broker(1)) as groups:
            groups.registered(time.monotonic(), 0.05)
            assert await _check(groups, time.monotonic()) == ErrorCode.none
            await asyncio.sleep(0.1)
            groups.registered(time.monotonic(), 5.0)  # no request came while it was gone
            assert groups.loaded("g") is None, "its state may be another broker's by now"
            assert groups.ownership.let_go_at("g") > 0
            groups.registered(time.monotonic(), 5.0)  # a renewal in time lets nothing go
            assert await _check(groups, time.monotonic()) == ErrorCode.none
            groups.registered(time.monotonic(), 5.0)
            assert groups.loaded("g") is not None

    asyncio.run(run())
