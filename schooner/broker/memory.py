"""How full Redis is, and so what record appends may do now: go, go slowed, or wait.

Records are what fills Redis; the broker's own writes (registrations, group and transaction state,
offset commits, share acknowledgements) are small. So record appends stop at a high-water mark below
maxmemory (`redis_memory_high_water`, 0.9 by default) and the rest is those writes' reserve: they never
fail for want of memory while records wait for retention or the archiver. Kafka's brokers have the
same split for free, their metadata living apart from the log's disks.

- The fill is Redis' own measure, as it refuses writes: used memory less what maxmemory does not
  count (replicas' and the AOF's buffers), over maxmemory; on a Redis Cluster the fullest primary's,
  as the deployment's writes are spread over all of them. Polled every POLL_SECONDS by the server
  (server.py); between polls each append this broker sends adds its bytes (`appending`), so a fast
  producer cannot run far past the mark before the next poll; raised at once when Redis refuses an
  append for memory (`refused`).
- From the mark on (`full`), appends are refused with KAFKA_STORAGE_ERROR, which clients retry.
- From `redis_memory_throttle_from` (0.75) on (`pressed`), produce to tiered topics is answered with a
  throttle_time_ms that grows from 0 to MAX_THROTTLE_MS at the mark (KIP-219: the connection is muted
  that long, as a quota does).
- From half of that on (`filling`), the archiver archives without pause (woken at once, not at its
  next interval) and trims Redis to what is archived, past local.retention.*: it is what frees the
  memory producers would otherwise wait for, and it starts before they are slowed.
- Without maxmemory (0: no limit) nothing is refused or slowed here; Redis may fill the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from ..storage.redis.calls import StorageError
from ..storage.redis.server_info import Memory

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1  # between looks, appends count their own bytes (appending)
FILLING_SHARE = 0.5  # of throttle_from: where the archiver stops waiting for its interval
MAX_THROTTLE_MS = 100  # at the mark: ten produce requests a second per connection
LOG_INTERVAL_SECONDS = 10.0


class RedisMemory:
    """The deployment's view of Redis memory (tenants share it: they share the Redis)."""

    def __init__(self, high_water: float = 0.9, throttle_from: float = 0.75) -> None:
        if not 0 < high_water <= 1:
            raise ValueError(f"redis_memory_high_water must be in (0, 1]: {high_water}")
        if not 0 < throttle_from <= high_water:
            raise ValueError(
                f"redis_memory_throttle_from must be in (0, redis_memory_high_water]: {throttle_from}"
            )
        self.high_water = high_water
        self.throttle_from = throttle_from
        self.fill = 0.0  # the last poll's (or refusal's) fill of the fullest Redis
        self.maxmemory = 0  # of that Redis; 0: no limit
        self._logged_at = -LOG_INTERVAL_SECONDS
        self._was_full = False
        self._filling = asyncio.Event()  # set while `filling`: wakes the archiver

    @property
    def full(self) -> bool:
        """Record appends wait: Redis is at the high-water mark."""
        return self.fill >= self.high_water

    @property
    def pressed(self) -> bool:
        """Redis nears the mark: tiered producers are slowed."""
        return self.fill >= self.throttle_from

    @property
    def filling(self) -> bool:
        """Redis is filling up: the archiver works without pause and trims all it has archived."""
        return self.fill >= self.throttle_from * FILLING_SHARE

    async def until_filling(self, timeout: float) -> None:
        """Returns once Redis is `filling`, or after `timeout` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._filling.wait(), timeout)

    def throttle_ms(self) -> int:
        """The throttle time of a produce to a tiered topic now: 0 below throttle_from, rising linearly
        to MAX_THROTTLE_MS at the mark."""
        if self.fill < self.throttle_from:
            return 0
        span = self.high_water - self.throttle_from
        if span <= 0:
            return MAX_THROTTLE_MS
        return int(MAX_THROTTLE_MS * min((self.fill - self.throttle_from) / span, 1.0))

    def saw(self, memories: Sequence[Memory]) -> None:
        """A poll's answer: each Redis' memory (one, or a cluster's primaries)."""
        limited = [m for m in memories if m.maxmemory]
        fullest = max(limited, key=lambda m: m.fill, default=None)
        self.fill = fullest.fill if fullest is not None else 0.0
        self.maxmemory = fullest.maxmemory if fullest is not None else 0
        self._changed()

    def appending(self, size: int) -> None:
        """An append of `size` bytes goes to Redis: counted until the next poll measures it."""
        if self.maxmemory:
            self.fill += size / self.maxmemory
            if self.filling:
                self._filling.set()

    def refused(self) -> None:
        """Redis refused an append for memory: full until the next poll says otherwise (a Redis filled by
        other writers, or one that came back over its limit)."""
        self.fill = max(self.fill, 1.0)
        self._changed()

    def _changed(self) -> None:
        if self.filling:
            self._filling.set()
        else:
            self._filling.clear()
        full = self.full
        now = time.monotonic()
        if full and (not self._was_full or now - self._logged_at >= LOG_INTERVAL_SECONDS):
            self._logged_at = now
            mark = f"{self.high_water:.0%}"
            where = (
                "Redis is out of memory (maxmemory reached, noeviction)"
                if self.fill >= 1.0
                else f"Redis memory is at {self.fill:.0%} of maxmemory (the high-water mark is {mark})"
            )
            log.warning(
                "%s: record appends wait (a retriable KAFKA_STORAGE_ERROR) until retention, the archiver "
                "or a topic deletion frees memory; consumers keep reading",
                where,
            )
        elif self._was_full and not full:
            log.warning("Redis memory at %.0f%% of maxmemory: record appends resumed", self.fill * 100)
        self._was_full = full

    async def watch(self, poll: Callable[[], Awaitable[Sequence[Memory]]]) -> None:
        """Polls Redis every POLL_SECONDS for as long as the broker runs."""
        while True:
            with contextlib.suppress(StorageError, OSError):  # out of reach: the last fill stands
                self.saw(await poll())
            await asyncio.sleep(POLL_SECONDS)
