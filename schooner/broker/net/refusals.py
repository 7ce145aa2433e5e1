"""Refused requests, said at INFO: which client (id, peer, principal), which API, and why.

A client whose request is refused often just retries or waits, and its user sees a hang; the broker's
log is where the reason can be read. So every refusal a client cannot explain to itself (a topic config
the broker rejects, an API or version it does not serve, a coordinator key type it does not know, a
record too large, a failed login, a denied operation) goes through `refused()`.

Cost: nothing here runs on the success path, only where a handler has already decided to refuse. A
misbehaving client may repeat a refused request thousands of times a second, so one line is written per
(logger, API, reason, client id, client address) every REPEAT_SECONDS; the next line after a quiet spell
says how many were suppressed meanwhile. The fields go to the log record as `extra`, so that
`--log-format json` (ops/logs.py) writes them as JSON fields.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from .session import ANONYMOUS, RequestScope, Session

REPEAT_SECONDS = 5.0
MAX_REMEMBERED = 10_000  # distinct (reason, client) pairs remembered; a flood of new ones is pruned

_Key = tuple[str, str, str, str, str]


class RepeatFilter:
    """Which refusals to write: the first of each key, then one per interval with the count held back."""

    def __init__(self, interval: float = REPEAT_SECONDS) -> None:
        self.interval = interval
        self._last: dict[_Key, float] = {}
        self._suppressed: dict[_Key, int] = {}

    def admit(self, key: _Key, now: float) -> int | None:
        """None to suppress this one; otherwise how many of the key were suppressed since its last line."""
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        if len(self._last) >= MAX_REMEMBERED:
            self._prune(now)
        self._last[key] = now
        return self._suppressed.pop(key, 0)

    def _prune(self, now: float) -> None:
        self._last = {k: t for k, t in self._last.items() if now - t < self.interval}
        self._suppressed = {k: n for k, n in self._suppressed.items() if k in self._last}


REPEATS = RepeatFilter()


def peer_of(session: Session | None, fallback_host: str = "") -> str:
    """host:port of the client, [host]:port for IPv6; the host alone when the port is not known."""
    host = session.host if session is not None else fallback_host.lstrip("/")
    port = session.port if session is not None else 0
    if not host:
        return "unknown"
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port else shown


def refused(
    log: logging.Logger,
    api: str,
    reason: str,
    *,
    kind: str | None = None,
    scope: RequestScope | None = None,
    client_id: str | None = None,
    session: Session | None = None,
    **fields: Any,
) -> None:
    """Logs at INFO that a request of `api` was refused and why. The client id, peer and principal come
    from the request's scope, or from `client_id` and `session` where there is no scope yet (a frame
    refused before its handler). `kind`, when given, is what repeats are told apart by instead of the
    whole reason (for reasons that carry varying numbers); `fields` are more structured fields (topic,
    error, ...)."""
    if not log.isEnabledFor(logging.INFO):
        return
    scope_host = ""
    if scope is not None:
        session = scope.session if session is None else session
        client_id = scope.client_id if client_id is None else client_id
        scope_host = scope.client_host
    if client_id is None:
        client_id = ""
    peer = peer_of(session, scope_host)
    host = session.host if session is not None else scope_host
    suppressed = REPEATS.admit((log.name, api, kind or reason, client_id, host), time.monotonic())
    if suppressed is None:
        return
    principal = session.principal if session is not None else ANONYMOUS
    extra: dict[str, Any] = {"client_id": client_id, "peer": peer, "api": api, "reason": reason, **fields}
    who = f"client {client_id!r} at {peer}"
    if principal != ANONYMOUS:
        extra["principal"] = principal
        who += f" ({principal})"
    message = "refused %s from %s: %s"
    args: tuple[Any, ...] = (api, who, reason)
    if suppressed:
        extra["suppressed"] = suppressed
        message += " (%d more like it suppressed)"
        args = (*args, suppressed)
    log.info(message, *args, extra=extra)
