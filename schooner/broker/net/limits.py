"""What one client may cost the broker: the connection limits, the counters kept about them, and a log
that says why a connection was refused or closed without flooding when many are."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from ...config import Settings

NOTICE_INTERVAL_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-connection limits, in the units the connection uses (seconds, bytes)."""

    max_request_bytes: int = 100 * 1024 * 1024
    idle_seconds: float = 600.0
    request_timeout_seconds: float = 30.0
    max_in_flight_requests: int = 64
    max_in_flight_bytes: int = 128 * 1024 * 1024
    # Responses computed but not yet taken by the client (response_budget.py). Kafka holds one response
    # per connection; 16 MiB lets a few ordinary fetches (1 MiB a partition) overlap, while one larger
    # response (a consumer's 50 MiB fetch.max.bytes) is still served, alone.
    max_queued_response_bytes: int = 16 * 1024 * 1024
    sasl_max_receive_bytes: int = 524_288  # the largest frame before SASL authentication
    failed_authentication_delay_seconds: float = 0.1  # the close after a failed authentication waits

    @classmethod
    def from_settings(cls, s: Settings) -> Limits:
        return cls(
            max_request_bytes=s.max_request_bytes,
            idle_seconds=s.connections_max_idle_ms / 1000,
            request_timeout_seconds=s.request_timeout_ms / 1000,
            max_in_flight_requests=s.max_in_flight_requests,
            max_in_flight_bytes=s.max_in_flight_bytes,
            max_queued_response_bytes=s.max_queued_response_bytes,
            sasl_max_receive_bytes=s.sasl_max_receive_bytes,
            failed_authentication_delay_seconds=s.connection_failed_authentication_delay_ms / 1000,
        )


@dataclass(slots=True)
class ConnectionStats:
    """The broker's own counts about its client connections (for operators and tests)."""

    open: int = 0
    held_requests: int = 0  # read but not yet answered, over all connections, now
    held_bytes: int = 0  # frame bytes of those requests
    peak_held_requests: int = 0  # the most any one connection has held at once
    peak_held_bytes: int = 0  # above the limit only for a single larger request, held alone
    backpressure_pauses: int = 0  # times a connection stopped reading because it held its limit
    queued_response_bytes: int = 0  # responses computed but not yet taken by their clients, now
    peak_queued_response_bytes: int = 0  # the most any one connection has queued at once
    response_pauses: int = 0  # times a connection stopped reading because its client did not take them
    abandoned_requests: int = 0  # waiting fetches cancelled because their connection closed
    refused: int = 0  # connections closed on arrival: over a cap, or the broker is stopping
    closed_idle: int = 0
    closed_incomplete_frame: int = 0
    closed_unread_response: int = 0  # the client did not take a response within request_timeout_ms


class Notices:
    """Logs the first line of each kind, then at most one per interval with a count of those held back.

    A flood of connections (or of slow ones timing out together) would otherwise write a line each.
    """

    def __init__(self, logger: logging.Logger, interval: float = NOTICE_INTERVAL_SECONDS) -> None:
        self._log = logger
        self._interval = interval
        self._last: dict[str, float] = {}
        self._held_back: dict[str, int] = {}

    def log(self, level: int, kind: str, msg: str, *args: Any) -> None:
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self._interval:
            self._held_back[kind] = self._held_back.get(kind, 0) + 1
            return
        self._last[kind] = now
        held_back = self._held_back.pop(kind, 0)
        if held_back:
            msg += " (and %d more like this since the last such line)"
            args = (*args, held_back)
        self._log.log(level, msg, *args)
