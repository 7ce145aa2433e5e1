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
