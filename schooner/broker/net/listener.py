"""The broker's client connections: caps on how many (per address and in all), and the drain on stop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ...config import Listener, Settings
from .connection import Connection, Dispatch
from .limits import ConnectionStats, Limits, Notices
from .session import Session

log = logging.getLogger(__name__)


class ClientConnections:
    def __init__(self, settings: Settings) -> None:
        self.limits = Limits.from_settings(settings)
        self.max_connections = settings.max_connections
        self.max_per_ip = settings.max_connections_per_ip
        self.stats = ConnectionStats()
        self.tasks: set[asyncio.Task[Any]] = set()  # one per open connection; stop() cancels them
        self._open: dict[asyncio.Task[Any], Connection] = {}
        self._per_ip: dict[str, int] = {}
        self._draining = False
        self._notices = Notices(log)
        # On TLS listeners: the principal of a connection's client certificate (tls.py); set by the broker.
        self.certificate_principal: Callable[[asyncio.StreamWriter], str] | None = None

    async def serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        handle: Dispatch,
        listener: Listener,
    ) -> None:
        """Serves one accepted connection until it closes, or closes it at once when over a cap."""
        peer = writer.get_extra_info("peername")
        ip = str(peer[0]) if isinstance(peer, tuple) else ""
        if self._refused(ip):
            self.stats.refused += 1
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        port = int(peer[1]) if isinstance(peer, tuple) and len(peer) > 1 else 0
        session = Session(listener, ip, port, authenticated=not listener.sasl)
        if listener.tls and self.certificate_principal is not None:
            try:
                session.principal = self.certificate_principal(writer)
            except ValueError as exc:  # no mapping rule applies, or an unreadable subject: Kafka refuses it
                log.warning("refusing a TLS client from %s: %s", ip, exc)
                writer.close()
                return
        conn = Connection(reader, writer, handle, self.limits, self.stats, self._notices, session)
        self.tasks.add(task)
        self._open[task] = conn
        self._per_ip[ip] = self._per_ip.get(ip, 0) + 1
        self.stats.open += 1
        try:
            await conn.serve()
        except asyncio.CancelledError:
            pass  # the broker is stopping; serve() closed the socket
        finally:
            self.stats.open -= 1
            left = self._per_ip[ip] - 1
            if left:
                self._per_ip[ip] = left
            else:
                del self._per_ip[ip]
            del self._open[task]
            self.tasks.discard(task)

    def sessions(self) -> list[Session]:
        """The sessions of the open connections (who is connected, as whom)."""
        return [conn.session for conn in self._open.values()]

    def _refused(self, ip: str) -> bool:
        # The newest connection is the one turned away: those already open keep working.
        if self._draining:
            return True
        if len(self._open) >= self.max_connections:
            self._notices.log(
                logging.WARNING,
                "max_connections",
                "refusing a connection from %s: %d connections open (max_connections=%d)",
                ip,
                len(self._open),
                self.max_connections,
            )
            return True
        from_ip = self._per_ip.get(ip, 0)
        if from_ip >= self.max_per_ip:
            self._notices.log(
                logging.WARNING,
                "max_connections_per_ip",
                "refusing a connection from %s: %d connections open from it (max_connections_per_ip=%d)",
                ip,
                from_ip,
                self.max_per_ip,
            )
            return True
        return False

    async def drain(self, timeout: float) -> None:
        """Every connection stops reading, answers what it has read and closes; waits up to timeout."""
        self._draining = True
        if not self._open:
            return
        log.info("draining %d client connections (up to %.1f s)", len(self._open), timeout)
        for conn in list(self._open.values()):
            conn.drain()
        _, left = await asyncio.wait(list(self.tasks), timeout=timeout)
        if left:
            log.warning("%d connections still busy after %.1f s; closing them", len(left), timeout)
