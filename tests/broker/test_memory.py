"""RedisMemory (broker/memory.py): the fill as Redis counts it, the high-water mark, the throttle below
it, and a refusal that counts as full until the next poll."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from schooner.broker.memory import MAX_THROTTLE_MS, RedisMemory
from schooner.storage.redis.server_info import Memory, parse_memory

MB = 1024 * 1024


def _memory(used_mb: float, maxmemory_mb: int, not_counted_mb: float = 0) -> Memory:
    return Memory(int(used_mb * MB), maxmemory_mb * MB, "noeviction", not_counted=int(not_counted_mb * MB))


def test_the_fill_leaves_out_what_maxmemory_does_not_count() -> None:
    info = {"used_memory": 90 * MB, "maxmemory": 100 * MB, "mem_not_counted_for_evict": 10 * MB}
    assert parse_memory(info).fill == pytest.approx(0.8)
    assert parse_memory({"used_memory": 90 * MB, "maxmemory": 0}).fill == 0.0


def test_appends_wait_at_the_mark_and_tiered_producers_slow_before() -> None:
    memory = RedisMemory(high_water=0.9, throttle_from=0.7)
    memory.saw([_memory(50, 100)])
    assert (memory.full, memory.pressed, memory.throttle_ms()) == (False, False, 0)
    memory.saw([_memory(80, 100)])
    assert not memory.full and memory.pressed
    assert memory.throttle_ms() == pytest.approx(MAX_THROTTLE_MS / 2, abs=1)
    memory.saw([_memory(95, 100, not_counted_mb=6)])  # 89 % as Redis counts it
    assert not memory.full and memory.throttle_ms() > 0.9 * MAX_THROTTLE_MS
    memory.saw([_memory(91, 100)])
    assert memory.full and memory.throttle_ms() == MAX_THROTTLE_MS


def test_appends_between_polls_count_until_the_next_one() -> None:
    memory = RedisMemory(high_water=0.9, throttle_from=0.7)
    memory.saw([_memory(85, 100)])
    for _ in range(4):
        memory.appending(MB)
    assert not memory.full  # 85 % measured, and 4 MB sent since
    memory.appending(2 * MB)
    assert memory.full
    memory.saw([_memory(80, 100)])  # the archiver trimmed meanwhile
    assert not memory.full


def test_the_archiver_is_woken_once_redis_starts_filling_up() -> None:
    memory = RedisMemory(high_water=0.9, throttle_from=0.8)  # filling from 40 %

    async def main() -> tuple[float, float]:
        memory.saw([_memory(30, 100)])
        began = time.monotonic()
        await memory.until_filling(0.2)  # not filling: the whole timeout
        waited = time.monotonic() - began
        asyncio.get_running_loop().call_later(0.05, memory.appending, 11 * MB)
        began = time.monotonic()
        await memory.until_filling(5)
        return waited, time.monotonic() - began

    waited, woken = asyncio.run(main())
    assert waited >= 0.2 and woken < 1
    assert memory.filling and not memory.pressed


def test_a_cluster_counts_its_fullest_primary_and_no_limit_counts_nothing() -> None:
    memory = RedisMemory()
    memory.saw([_memory(10, 100), _memory(95, 100), _memory(300, 0)])
    assert memory.full and memory.maxmemory == 100 * MB
    memory.saw([_memory(300, 0)])
    assert memory.fill == 0.0 and not memory.pressed


def test_a_refusal_is_full_until_a_poll_says_otherwise(caplog: pytest.LogCaptureFixture) -> None:
    memory = RedisMemory(high_water=1.0, throttle_from=1.0)  # no reserve: Redis' own limit
    memory.saw([_memory(99, 100)])
    assert not memory.full
    with caplog.at_level(logging.WARNING):
        memory.refused()
        assert memory.full
        memory.refused()
        memory.saw([_memory(50, 100)])
    assert not memory.full
    said = [r.getMessage() for r in caplog.records]
    assert sum("Redis is out of memory" in m for m in said) == 1  # once, not per refusal
    assert any("record appends resumed" in m for m in said)


@pytest.mark.parametrize(("high_water", "throttle_from"), [(0, 0), (1.2, 0.5), (0.8, 0.9)])
def test_marks_out_of_order_are_refused(high_water: float, throttle_from: float) -> None:
    with pytest.raises(ValueError, match="redis_memory"):
        RedisMemory(high_water, throttle_from)
