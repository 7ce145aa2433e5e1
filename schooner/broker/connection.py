"""One client connection: frames in, handlers run concurrently, responses out in request order."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol.apis import ApiKey
from ..protocol.errors import ProtocolError, UnsupportedRequest
from ..protocol.framing import FrameDecoder
from ..protocol.messages import Request, RequestHeader, decode_request, encode_response
from .context import CLIENT
from .handlers.api_versions import unsupported_version_response

log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Any]]
MAX_IN_FLIGHT = 64


class Connection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        handle: Handler,
        max_request_bytes: int,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._handle = handle
        self._decoder = FrameDecoder(max_request_bytes)
        # Each item: (header, task producing the response body, or None when no reply is due).
        self._pending: asyncio.Queue[tuple[RequestHeader, asyncio.Future[Any]] | None] = asyncio.Queue(
            MAX_IN_FLIGHT
        )
        self.peer = writer.get_extra_info("peername")
        self._host = f"/{self.peer[0]}" if isinstance(self.peer, tuple) else "/unknown"

    async def serve(self) -> None:
        responder = asyncio.create_task(self._respond())
        try:
            await self._read_requests()
        finally:
            await self._pending.put(None)
            with contextlib.suppress(Exception):  # the peer went away mid-write
                await responder
            self._writer.close()

    async def _read_requests(self) -> None:
        while True:
            try:
                data = await self._reader.read(1 << 16)
            except (ConnectionError, OSError):
                return
            if not data:
                return
            try:
                frames = self._decoder.feed(data)
            except ProtocolError as exc:
                log.info("closing %s: %s", self.peer, exc)
                return
            for raw in frames:
                try:
                    request = decode_request(raw)
                except UnsupportedRequest as exc:
                    if exc.api_key != ApiKey.API_VERSIONS:
                        log.info("closing %s: %s", self.peer, exc)
                        return
                    # KIP-511: answer an unknown ApiVersions version with v0 and our ranges.
                    header = RequestHeader(exc.api_key, 0, exc.correlation_id, None)
                    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                    done.set_result(unsupported_version_response())
                    await self._pending.put((header, done))
                    continue
                except ProtocolError as exc:
                    log.info("closing %s: %s", self.peer, exc)
                    return
                CLIENT.set((request.header.client_id or "", self._host))
                task = asyncio.ensure_future(self._handle(request))
                await self._pending.put((request.header, task))

    async def _respond(self) -> None:
        broken = False
        while True:
            item = await self._pending.get()
            if item is None:
                return
            header, task = item
            if broken:
                task.cancel()
                continue
            try:
                body = await task
            except Exception:
                # No error response fits every API; closing makes the client retry elsewhere.
                log.exception("handler for %s v%d failed", ApiKey(header.api_key).name, header.api_version)
                self._writer.close()
                broken = True
                continue
            if body is None:  # acks=0 produce
                continue
            try:
                data = encode_response(header, body)
            except Exception:
                name = ApiKey(header.api_key).name
                log.exception("cannot encode %s v%d response", name, header.api_version)
                self._writer.close()
                broken = True
                continue
            self._writer.write(data)
            if self._pending.empty():
                await self._writer.drain()
