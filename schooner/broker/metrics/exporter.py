"""Serves a broker's registry as Prometheus text at /metrics (any path answers the same).

prometheus_client's own threaded HTTP server rather than one on the broker's event loop: it already
does content negotiation (Prometheus text or OpenMetrics) and gzip, and rendering a large registry
happens on its thread, not between the broker's requests. Only the scrape-time reads (gauges.py)
run on the loop, handed over with run_coroutine_threadsafe.
"""

from __future__ import annotations

import asyncio
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        # Every address for an empty host, as the broker's listeners take it.
        server, thread = start_http_server(port, addr=host or "0.0.0.0", registry=registry)
        self._server: WSGIServer = server
        self._thread: threading.Thread = thread

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    async def stop(self) -> None:
        # shutdown() waits for the serving loop's next poll (up to half a second): off the event loop.
        await asyncio.to_thread(self._server.shutdown)
        self._server.server_close()
