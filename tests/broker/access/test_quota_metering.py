"""Handler time for request_percentage: the time a request's coroutine, and the tasks it starts, run on
the event loop, never the time they wait. The busy loops below run until the clock has moved on by their
length, so what is measured has a sure lower bound; the wait is long enough that counting it would show."""

from __future__ import annotations

import asyncio
import time

from schooner.broker.access.quotas import metered_task, run_metered

BUSY = 0.05
WAIT = 1.0


def _busy() -> None:
    until = time.perf_counter() + BUSY
    while time.perf_counter() < until:
        pass


async def _child() -> str:
    _busy()
    await asyncio.sleep(WAIT)
    return "child"


async def _handler() -> str:
    _busy()
    child = asyncio.ensure_future(_child())
    await asyncio.sleep(WAIT)
    _busy()
    return await child


def test_handler_time_counts_the_tasks_it_starts_and_not_its_waits() -> None:
    async def main() -> tuple[str, float]:
        asyncio.get_running_loop().set_task_factory(metered_task)  # type: ignore[arg-type]
        return await run_metered(_handler())

    result, seconds = asyncio.run(main())
    assert result == "child"
    assert 3 * BUSY <= seconds < WAIT / 2


def test_a_cancelled_handler_is_cancelled_through_the_meter() -> None:
    async def main() -> bool:
        task = asyncio.ensure_future(run_metered(asyncio.sleep(WAIT)))
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(main())
