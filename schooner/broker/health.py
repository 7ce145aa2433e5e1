"""Whether this broker can reach Redis, as its periodic registration round trip finds.

A member's heartbeat fails while its coordinator cannot reach Redis, through no fault of the member.
So no member session lapses while Redis is out of reach, and sessions count from the moment it is
back: a member gets a whole session to get through again, as after a coordinator failover.
"""

from __future__ import annotations

import time

SLOW_SECONDS = 1.0  # a round trip in flight this long already counts as trouble


class RedisHealth:
    def __init__(self) -> None:
        self._probe_started: float | None = None
        self._failing = False
        self.back_at = 0.0  # time.monotonic() when Redis answered again after trouble

    def probing(self) -> None:
        """A round trip starts (the caller reports its outcome with reached() or failed())."""
        self._probe_started = time.monotonic()

    def reached(self) -> None:
        now = time.monotonic()
        if self.in_trouble(now):
            self.back_at = now
        self._failing, self._probe_started = False, None

    def failed(self) -> None:
        self._failing, self._probe_started = True, None

    def in_trouble(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        started = self._probe_started
        return self._failing or (started is not None and now - started > SLOW_SECONDS)

    def since(self, last_seen: float) -> float:
        """When a member last counts as seen: its last heartbeat, or Redis's return if later."""
        return max(last_seen, self.back_at)
