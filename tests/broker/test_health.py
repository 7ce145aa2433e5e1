"""RedisHealth (broker/health.py): what counts as trouble reaching Redis, and when it ended."""

from __future__ import annotations

import time

from schooner.broker.health import SLOW_SECONDS, RedisHealth


def test_trouble_is_a_failed_or_slow_round_trip() -> None:
    health = RedisHealth()
    assert not health.in_trouble()
    health.probing()
    assert not health.in_trouble()
    assert health.in_trouble(time.monotonic() + SLOW_SECONDS + 0.1)  # still in flight: trouble
    health.reached()
    assert health.back_at == 0.0  # a quick answer after no trouble changes nothing
    health.failed()
    assert health.in_trouble()
    health.reached()
    assert not health.in_trouble() and time.monotonic() - health.back_at < 1
    assert health.since(0.0) == health.back_at and health.since(health.back_at + 5) == health.back_at + 5


def test_trouble_began_at_the_failed_round_trip_and_is_kept_for_the_grace() -> None:
    health = RedisHealth()
    assert health.trouble_began(grace=5) is None
    health.probing()
    started = time.monotonic()
    health.failed()
    began = health.trouble_began(grace=5)
    assert began is not None and began <= started
    health.probing()
    health.failed()  # a later failure of the same trouble keeps its start
    assert health.trouble_began(grace=5) == began
    health.probing()
    health.reached()
    assert health.trouble_began(grace=5) == began  # back, but within the grace
    assert health.trouble_began(grace=5, now=health.back_at + 5.1) is None
    health.probing()  # a round trip slow enough to be trouble began it
    slow = time.monotonic() + SLOW_SECONDS + 0.1
    assert health.trouble_began(grace=5, now=slow) is not None and health.trouble_began(5, slow) > began
