"""Whether this broker can reach Redis, as its periodic registration round trip finds.

A member's heartbeat fails while its coordinator cannot reach Redis, through no fault of the member.
So no member session lapses while Redis is out of reach, and sessions count from the moment it is
back: a member gets a whole session to get through again, as after a coordinator failover.
Brokers' registrations get the same grace (metadata/cluster_view.py): a Redis that is down or full
stops every broker's renewals at once, and counting them lapsed would split the deployment into
brokers that each see only themselves.
"""

from __future__ import annotations

import time

SLOW_SECONDS = 1.0  # a round trip in flight this long already counts as trouble


class RedisHealth:
    def __init__(self) -> None:
        self._probe_started: float | None = None
        self._failing = False
        self.back_at = 0.0  # time.monotonic() when Redis answered again after trouble
        self._trouble_began: float | None = None  # the round trip that started the present trouble
        self._last_trouble_began: float | None = None  # ... and the last one's, once it ended

    def probing(self) -> None:
        """A round trip starts (the caller reports its outcome with reached() or failed())."""
        self._probe_started = time.monotonic()

    def reached(self) -> None:
        now = time.monotonic()
        if self.in_trouble(now):
            self.back_at = now
            self._last_trouble_began = self._trouble_began or self._probe_started
        self._failing, self._probe_started, self._trouble_began = False, None, None

    def failed(self) -> None:
        if self._trouble_began is None:
            self._trouble_began = self._probe_started or time.monotonic()
        self._failing, self._probe_started = True, None

    def in_trouble(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        started = self._probe_started
        return self._failing or (started is not None and now - started > SLOW_SECONDS)

    def since(self, last_seen: float) -> float:
        """When a member last counts as seen: its last heartbeat, or Redis's return if later."""
        return max(last_seen, self.back_at)

    def trouble_began(self, grace: float, now: float | None = None) -> float | None:
        """When the present trouble began (time.monotonic()), or the last one if it ended less than
        `grace` seconds ago; None when Redis has answered well for that long."""
        now = time.monotonic() if now is None else now
        if self.in_trouble(now):
            return self._trouble_began or self._probe_started
        if self._last_trouble_began is not None and now - self.back_at < grace:
            return self._last_trouble_began
        return None
