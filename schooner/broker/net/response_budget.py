"""What one connection's responses may cost: the bytes computed for its client and not yet taken.

A client that sends requests but does not read its responses would otherwise make the broker hold one
computed response per request in flight: up to max_in_flight_requests fetches of up to max_bytes each.
Kafka reads one request per connection at a time and mutes the socket until the response is sent. Here
requests still overlap, but the next one starts only while the connection's queued bytes stay within
max_queued_response_bytes. Queued are:
- responses computed and encoded, waiting for their turn to be written;
- the response being written, until the transport has taken all but its low-water mark of it: writing
  waits (drain()) while the transport holds more than its high-water mark (64 KiB by default), so the
  transport itself never holds much beyond the response being written;
- for each Fetch or ShareFetch still computing, a reservation of what its response may grow to, so that
  fetches started together cannot each build a large response.
With nothing queued a request always starts: one response larger than the bound is served, alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...protocol.apis import ApiKey
from ...protocol.messages import Request
from .limits import ConnectionStats

# A fetch's first batch goes out whatever its max_bytes (KIP-74); Kafka's batches are up to about 1 MiB
# (message.max.bytes), so no fetch reserves less.
RESERVE_FLOOR = 1 << 20


def reservation(request: Request, limit: int) -> int:
    """What the response to this request may hold, counted before it is computed: a Fetch's max_bytes
    (older versions have none: the whole bound), the whole bound for a ShareFetch (it sends every record
    it acquires), and nothing for the rest, whose responses count once they are computed."""
    key = request.header.api_key
    if key == ApiKey.SHARE_FETCH:
        return limit
    if key != ApiKey.FETCH:
        return 0
    body: Any = request.body
    return min(limit, max(int(getattr(body, "max_bytes", limit)), RESERVE_FLOOR))


class ResponseBudget:
    """One connection's queued response bytes; on_room() is called whenever some are released."""

    def __init__(self, limit: int, stats: ConnectionStats, on_room: Callable[[], None]) -> None:
        self.limit = limit
        self.queued = 0  # encoded responses not yet taken by the client
        self.reserved = 0  # what the fetches still computing may add
        self._stats = stats
        self._on_room = on_room

    def fits(self, reserve: int) -> bool:
        used = self.queued + self.reserved
        return not used or used + reserve <= self.limit

    def reserve(self, size: int) -> None:
        self.reserved += size

    def settle(self, reserved: int, size: int) -> None:
        """A request's response is computed (size 0: none, or it failed): it replaces the reservation."""
        self.reserved -= reserved
        self.queued += size
        st = self._stats
        st.queued_response_bytes += size
        st.peak_queued_response_bytes = max(st.peak_queued_response_bytes, self.queued)
        if reserved > size:
            self._on_room()

    def taken(self, size: int) -> None:
        """A response was written and taken by the transport, or dropped."""
        if not size:
            return
        self.queued -= size
        self._stats.queued_response_bytes -= size
        self._on_room()
