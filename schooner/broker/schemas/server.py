"""The schema registry's HTTP server, on the broker's event loop (uvicorn serving the Starlette app of
registry/api.py), on schema_registry_port, with the first listener's host and TLS."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable, Iterator

import uvicorn

from ...config import Settings
from ...registry.api import RegistryApp
from ..context import BrokerContext
from .access import BrokerAccess

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # The broker handles SIGTERM and SIGINT itself (a graceful stop); uvicorn must not take them.
        yield


class RegistryServer:
    def __init__(self, app: RegistryApp, sock: socket.socket, tls: ssl.SSLContext | None) -> None:
        config = uvicorn.Config(app.app(), log_level="warning", access_log=False, lifespan="off")
        config.load()
        config.ssl = tls  # the broker's own context: the listener's certificate and client-auth settings
        self.app = app
        self._sock = sock
        self._server = _Server(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(sockets=[self._sock]))

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 5)
        self._sock.close()


def open_registry_server(
    settings: Settings,
    base: BrokerContext,
    context_of: Callable[[str | None], BrokerContext],
    tls: ssl.SSLContext | None,
) -> RegistryServer | None:
    """The server, bound (not yet serving), or None when the registry is off. A port in use refuses the
    start when the port was asked for, and only warns on the default one (8081), so a second deployment on
    the host still serves Kafka."""
    address = settings.schema_registry_address
    if address is None:
        return None
    host, port = address
    try:
        sock = socket.create_server((host or "0.0.0.0", port), backlog=1024)
    except OSError as exc:
        if "schema_registry_port" in settings.explicit:
            raise
        log.warning("the schema registry is not served: port %d: %s", port, exc)
        return None
    listener = settings.listeners_in_force()[0]
    authenticate = any(x.sasl for x in settings.listeners_in_force())
    access = BrokerAccess(base, context_of, lambda ctx: ctx.schemas, listener, authenticate)
    return RegistryServer(RegistryApp(access, base.cluster_id), sock, tls)
