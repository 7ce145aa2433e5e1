"""A Redis connection that pipelines: each command is written as soon as it is issued, and replies
are matched to callers in order.

Written by hand because redis-py's asyncio client waits for a reply before the next command on a
connection. Appends to one partition must reach Redis in request order, and waiting for each reply
would leave Redis idle while the broker decodes the next batch: on this lane the broker sends batch
N+1 while Redis runs batch N. The connection handshake (AUTH, SELECT, TLS) is redis-py's own.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from typing import Any

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

from . import scripts


class PipelinedLane:
    def __init__(self, client: Any) -> None:
        self._client = client
        self._writer: asyncio.StreamWriter | None = None
        self._waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._reader_task: asyncio.Task[None] | None = None
        self._connecting: asyncio.Lock = asyncio.Lock()
        self._connection: Any = None

    async def _connect(self) -> asyncio.StreamWriter:
        async with self._connecting:
            if self._writer is not None:
                return self._writer
            connection = self._client.connection_pool.make_connection()
            await connection.connect()
            self._connection = connection
            reader, writer = connection._reader, connection._writer
            self._writer = writer
            self._reader_task = asyncio.ensure_future(self._read_replies(reader))
            return writer

    async def _read_replies(self, reader: asyncio.StreamReader) -> None:
        parser = hiredis.Reader(replyError=ResponseError)
        error: BaseException = RedisConnectionError("connection to Redis lost")
        try:
            while True:
                data = await reader.read(1 << 16)
                if not data:
                    break
                parser.feed(data)
                while (reply := parser.gets()) is not False:
                    future = self._waiting.popleft()
                    if future.done():
                        continue
                    if isinstance(reply, ResponseError):
                        if str(reply).startswith("NOSCRIPT"):
                            reply = NoScriptError(str(reply))
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        except (OSError, asyncio.IncompleteReadError) as exc:
            error = RedisConnectionError(str(exc))
        except asyncio.CancelledError:
            error = RedisConnectionError("lane closed")
            raise
        finally:
            self._writer = None
            while self._waiting:
                waiter = self._waiting.popleft()
                if not waiter.done():
                    waiter.set_exception(error)
            if self._connection is not None:
                self._connection._reader = self._connection._writer = None

    async def send(self, *args: Any) -> asyncio.Future[Any]:
        """Writes the command now (in call order) and returns a future for its reply."""
        writer = self._writer or await self._connect()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        writer.write(hiredis.pack_command(args))
        return future

    async def send_script(self, name: str, keys: list[str], args: list[Any]) -> asyncio.Future[Any]:
        """EVALSHA on the lane; the reply future reloads the script and retries once on NOSCRIPT."""
        s = scripts.script(name)
        first = await self.send("EVALSHA", s.sha, len(keys), *keys, *args)
        loop = asyncio.get_running_loop()
        result: asyncio.Future[Any] = loop.create_future()

        def done(f: asyncio.Future[Any]) -> None:
            exc = f.exception()
            if isinstance(exc, NoScriptError):
                loop.create_task(self._retry(result, s, keys, args))
            elif exc is not None:
                result.set_exception(exc)
            else:
                result.set_result(f.result())

        first.add_done_callback(done)
        return result

    async def _retry(
        self, result: asyncio.Future[Any], s: scripts.Script, keys: list[str], args: list[Any]
    ) -> None:
        try:
            await (await self.send("SCRIPT", "LOAD", s.source))
            result.set_result(await (await self.send("EVALSHA", s.sha, len(keys), *keys, *args)))
        except Exception as exc:
            result.set_exception(exc)

    async def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
        if self._writer is not None:
            self._writer.close()
        if self._connection is not None:
            with contextlib.suppress(Exception):
                await self._connection.disconnect()
