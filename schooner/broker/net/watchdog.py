"""A connection's watchdog: one timer, armed no later than the earliest deadline in force and re-checked
when it fires, rather than a timer per deadline (connection.py says which deadlines there are)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

# The earliest deadline in force and its kind, or None while the connection waits on the broker's work.
Deadline = Callable[[], tuple[float, str] | None]


class Watchdog:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        deadline: Deadline,
        expire: Callable[[str], None],
        recheck_seconds: float,
    ) -> None:
        self._loop = loop
        self._deadline = deadline
        self._expire = expire
        self._recheck = recheck_seconds  # no deadline may start sooner than this without arming one
        self._timer: asyncio.TimerHandle | None = None
        self._at = 0.0
        self.stopped = False

    def arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._at = at
        self._timer = self._loop.call_at(at, self._check)

    def arm_by(self, at: float) -> None:
        """A deadline may now come earlier than the timer: make the timer fire by then."""
        if at < self._at:
            self.arm(at)

    def stop(self) -> None:
        self.stopped = True
        if self._timer is not None:
            self._timer.cancel()

    def _check(self) -> None:
        self._timer = None
        if self.stopped:
            return
        now = self._loop.time()
        found = self._deadline()
        if found is None:
            # Every later deadline is either at least this far off or armed for when it starts.
            self.arm(now + self._recheck)
        elif now >= found[0]:
            self._expire(found[1])
        else:
            self.arm(found[0])
