"""A subscription to one channel, read straight off its connection and parsed by hiredis.

Written by hand because redis-py's PubSub passes each message through a retry wrapper, a timeout
context and a push-message handler: about 50 µs of broker CPU per message, and on one Redis every
append publishes a notice that every broker hears, its own included, so that was paid per Produce
request. Here each chunk read is parsed at once and its messages handed out without a Redis round trip
between them. The connection and its handshake (AUTH, SELECT, TLS) are redis-py's, as on the lane.

A quiet connection is PINGed after `quiet` seconds, and one that does not answer within as long again
is closed (a stalled path shows no error): a timer checks, rather than a timeout on every read.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable
from typing import Any

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import redis_internals, resp

_CHUNK = 1 << 16


class Subscription:
    """SUBSCRIBE to `channel` on a connection of its own (made by `make_connection`, a redis-py factory)."""

    def __init__(self, make_connection: Callable[[], Any], channel: str, quiet: float) -> None:
        self._make_connection = make_connection
        self._channel = channel
        self._quiet = quiet
        self._connection: Any = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._parser = hiredis.Reader(replyError=ResponseError)
        self._replies: collections.deque[Any] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None
        self._heard_at = 0.0  # loop time of the last bytes read
        self._pinged = False
        self._failure: Exception | None = None
        self._closed = False

    async def subscribe(self) -> None:
        connection = self._make_connection()
        self._connection = connection
        await connection.connect()  # bounded by the client's connect timeout
        self._reader, self._writer = redis_internals.streams(connection)
        self._writer.write(resp.pack(("SUBSCRIBE", self._channel)))
        loop = asyncio.get_running_loop()
        self._heard_at = loop.time()
        self._timer = loop.call_at(self._heard_at + self._quiet, self._check)

    async def next(self) -> bytes | None:
        """The next message, or None when the subscription is confirmed. Raises a redis-py error (or
        OSError) when the connection fails or stays silent; then close this one and subscribe anew."""
        while True:
            while self._replies:
                reply = self._replies.popleft()
                if isinstance(reply, ResponseError):
                    raise redis_internals.parse_error(str(reply))
                if not isinstance(reply, list) or len(reply) < 3:
                    continue  # not a pub/sub message
                kind = reply[0]
                if kind == b"message":
                    data: bytes = reply[2]
                    return data
                if kind == b"subscribe":
                    return None
                # b"pong" (the answer to our PING): hearing it was the point
            if self._failure is not None or self._closed or self._reader is None:
                raise self._failure or RedisConnectionError("subscription closed")
            data = await self._reader.read(_CHUNK)
            if not data:
                raise self._failure or RedisConnectionError("subscription connection lost")
            self._heard_at = asyncio.get_running_loop().time()
            self._pinged = False
            self._parser.feed(data)
            while (reply := self._parser.gets()) is not False:
                self._replies.append(reply)

    def _check(self) -> None:
        self._timer = None
        if self._closed or self._writer is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        if now - self._heard_at < self._quiet:
            self._timer = loop.call_at(self._heard_at + self._quiet, self._check)
        elif not self._pinged:
            self._pinged = True
            self._writer.write(resp.pack(("PING",)))
            self._timer = loop.call_at(now + self._quiet, self._check)
        else:
            self._failure = RedisTimeoutError(f"no answer to PING within {self._quiet:g} s")
            self._writer.transport.abort()  # the read under way ends, and next() raises the failure

    async def close(self) -> None:
        """Also ends a read in progress."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._writer is not None:
            self._writer.transport.abort()
        connection, self._connection = self._connection, None
        if connection is not None:
            redis_internals.detach(connection)
            with contextlib.suppress(Exception):
                await connection.disconnect()
