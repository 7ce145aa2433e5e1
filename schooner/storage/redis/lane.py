"""A Redis connection that pipelines: each command is written as soon as it is issued, and replies
are matched to callers in order.

Written by hand because redis-py's asyncio client waits for a reply before the next command on a
connection. Appends to one partition must reach Redis in request order, and waiting for each reply
would leave Redis idle while the broker decodes the next batch: on this lane the broker sends batch
N+1 while Redis runs batch N. The connection handshake (AUTH, SELECT, TLS) is redis-py's own.
With a timeout, a reply that does not come in time fails the connection and all that waits on it;
the next command opens a new connection.

Once connected, the lane reads its transport itself (a protocol of its own, not redis-py's stream
reader): each chunk is parsed where it arrives and each caller's future settled there, with its call's
parser, so a reply reaches its caller in the next turn of the event loop rather than three turns later.

A call marked raw (a fetch's XRANGE) gets its reply as the RESP bytes it came in, found by resp.reply_scan
without making objects of it: while one is owed, chunks are kept and cut into replies, and only the
others go to hiredis. Raw is a wish, not a promise: a reply hiredis had begun before the raw call was
sent reaches it parsed, and its parser takes both.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import hiredis
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    NoScriptError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import redis_internals, resp, scripts
from .calls import Call, Progress, Redis, RoundTripObserver, Steps

T = TypeVar("T")


# Cluster replies that mean the command did not run on this node.
REDIRECTS = (MovedError, AskError, TryAgainError, ClusterDownError)


# What a reply settles: the caller's future, and the Call whose parser reads it (None: the raw reply).
_Owed = tuple[asyncio.Future[Any], float, "Call[Any] | None"]


class _Link:
    """One connection of the lane and the replies it still owes, oldest first, with their send times.
    Kept per connection, so that an old connection's ending never touches its replacement."""

    __slots__ = (
        "connection", "transport", "waiting", "timer", "scripts", "unsent", "parser", "raw_owed", "pending",
        "scan_at", "scan_stack",
    )  # fmt: skip

    def __init__(self, connection: Any, transport: asyncio.Transport) -> None:
        self.connection = connection
        self.transport = transport
        self.scripts: set[str] = set()  # loaded on this connection's server
        self.waiting: collections.deque[_Owed] = collections.deque()
        self.timer: asyncio.TimerHandle | None = None
        # Commands issued in this turn of the event loop, written together at its end (see send).
        self.unsent: list[bytes] = []
        self.parser = hiredis.Reader(replyError=ResponseError)
        self.raw_owed = 0  # raw calls among those waiting
        # While raw_owed: the bytes received and not yet cut into replies, the first reply's from 0, and
        # how far reply_scan has read it (its position and the counts still owed at each level).
        self.pending = bytearray()
        self.scan_at = 0
        self.scan_stack = [1]


class _Replies(asyncio.Protocol):
    """The lane's side of one connection's transport, in place of redis-py's stream reader."""

    def __init__(self, lane: PipelinedLane, link: _Link) -> None:
        self._lane = lane
        self._link = link

    def data_received(self, data: bytes) -> None:
        self._lane._received(self._link, data)

    def eof_received(self) -> bool:
        return False  # close: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        why = str(exc) if exc is not None else "connection to Redis lost"
        self._lane._drop(self._link, RedisConnectionError(why))


class PipelinedLane:
    """One pipelined connection: to the single Redis of `client`, or to whatever server
    `make_connection` (a redis-py connection factory) connects to, such as one cluster node."""

    def __init__(
        self,
        client: Redis | None,
        timeout_ms: int | None = None,
        make_connection: Callable[[], Any] | None = None,
    ) -> None:
        if make_connection is None:
            assert client is not None
            make_connection = client.connection_pool.make_connection
        self._make_connection = make_connection
        # A reply later than this fails every command waiting on the connection, and the next command
        # opens a new one: a stalled or silently dead connection must not hold appends forever.
        self._timeout = timeout_ms / 1000 if timeout_ms else None
        self._link: _Link | None = None
        self._connecting: asyncio.Lock = asyncio.Lock()
        self._attempts = 0  # connects tried so far
        self._failed: Exception | None = None  # how the last one failed, if it did
        # Told each command's time from send to reply, and whether it failed (calls.observe_round_trips).
        self.observer: RoundTripObserver | None = None

    async def _connect(self) -> _Link:
        attempt = self._attempts
        async with self._connecting:
            if self._link is not None:
                return self._link
            if self._attempts != attempt and self._failed is not None:
                # A connect failed while this one waited for it: fail too, rather than wait as long
                # again, so no command waits longer than one connect timeout.
                raise self._failed
            self._attempts += 1
            # redis-py's connect() is bounded by the client's connect and socket timeouts.
            connection = self._make_connection()
            try:
                await connection.connect()
            except Exception as exc:
                self._failed = exc
                raise
            self._failed = None
            reader, writer = redis_internals.streams(connection)
            transport = cast(asyncio.Transport, writer.transport)  # a socket's: it reads too
            link = _Link(connection, transport)
            # The handshake's replies are read; from here on the lane reads the transport itself.
            buffered = redis_internals.buffered(reader)
            transport.set_protocol(_Replies(self, link))
            self._link = link
            if buffered:
                self._received(link, buffered)
            return link

    def _received(self, link: _Link, data: bytes) -> None:
        """Parses a chunk and settles what it answers, in order."""
        if link.raw_owed and not link.pending and link.parser.has_data():
            pass  # hiredis holds the start of a reply: it reads on (a raw call then gets a parsed reply)
        elif link.raw_owed or link.pending:
            self._cut(link, data)
            return
        parser = link.parser
        try:
            parser.feed(data)
            observer = self.observer
            now = asyncio.get_running_loop().time() if observer is not None else 0.0
            while (reply := parser.gets()) is not False:
                self._answer(link, reply, now)
        except (hiredis.ProtocolError, IndexError) as exc:  # bytes that are not RESP, or a reply unasked
            self._drop(link, RedisConnectionError(f"bad reply from Redis: {exc!r}"))

    def _answer(self, link: _Link, reply: Any, now: float) -> None:
        """Settles the oldest waiting call with its reply."""
        future, sent, call = link.waiting.popleft()
        if call is not None and call.raw:
            link.raw_owed -= 1
        if self.observer is not None:  # one clock read per chunk of replies, not per reply
            self.observer(now - sent, not _failure(reply))
        if future.done():
            return  # its caller was cancelled (its client left, or the broker stops)
        if isinstance(reply, ResponseError):
            # redis-py's classes: NoScriptError, and on a cluster MovedError, AskError...
            self._refused(future, call, redis_internals.parse_error(str(reply)))
        elif call is None:
            future.set_result(reply)
        else:
            _settle(future, call, reply)

    def _cut(self, link: _Link, data: bytes) -> None:
        """_received while a raw call is owed: the chunk is cut into whole replies; a raw call's is
        handed on as bytes, the others (and errors) parsed by hiredis."""
        buf = link.pending
        buf += data
        start, at, stack = 0, link.scan_at, link.scan_stack
        now = asyncio.get_running_loop().time() if self.observer is not None else 0.0
        try:
            while start < len(buf):
                at = resp.reply_scan(buf, at, stack)
                if stack:
                    break  # the rest of this reply is still to come
                if not link.waiting:
                    raise IndexError("a reply nobody asked for")
                call = link.waiting[0][2]
                if call is not None and call.raw and buf[start] != ord("-"):
                    self._answer(link, buf[start:at], now)
                else:
                    link.parser.feed(buf, start, at - start)  # type: ignore[arg-type]  # any buffer
                    self._answer(link, link.parser.gets(), now)
                start = at
                stack.append(1)
        except (ValueError, hiredis.ProtocolError, IndexError) as exc:
            self._drop(link, RedisConnectionError(f"bad reply from Redis: {exc!r}"))
            return
        del buf[:start]
        link.scan_at, link.scan_stack = at - start, stack

    def _refused(self, future: asyncio.Future[Any], call: Call[Any] | None, exc: Exception) -> None:
        if isinstance(exc, NoScriptError) and call is not None and call.script:
            asyncio.get_running_loop().create_task(self._retry(future, call))
        elif call is not None and call.on_error is not None and not isinstance(exc, REDIRECTS):
            future.set_result(call.on_error(exc))
        else:  # a redirect is not run: the caller sends it where the cluster says
            future.set_exception(exc)

    def _drop(self, link: _Link, error: BaseException) -> None:
        """Ends a connection: the commands waiting on it fail, and the next command opens a new one."""
        if self._link is link:
            self._link = None
        if link.timer is not None:
            link.timer.cancel()
            link.timer = None
        observer = self.observer
        now = asyncio.get_running_loop().time() if observer is not None and link.waiting else 0.0
        while link.waiting:
            future, sent, _ = link.waiting.popleft()
            if observer is not None:
                observer(now - sent, False)
            if not future.done():
                future.set_exception(error)
        # abort, not close: close would keep the socket open until a stalled peer took the buffer.
        link.transport.abort()
        redis_internals.detach(link.connection)

    def _on_timer(self, link: _Link) -> None:
        link.timer = None
        if not link.waiting or self._timeout is None:
            return
        loop = asyncio.get_running_loop()
        deadline = link.waiting[0][1] + self._timeout
        if loop.time() < deadline:
            link.timer = loop.call_at(deadline, self._on_timer, link)
            return
        self._drop(link, RedisTimeoutError(f"no reply from Redis within {self._timeout:g} s"))

    async def send(self, *args: Any) -> asyncio.Future[Any]:
        """Queues the command (in call order) for this turn's write and returns a future for its reply."""
        return await self._send(args, None)

    async def _send(self, args: Sequence[Any], call: Call[Any] | None) -> asyncio.Future[Any]:
        """send(), the reply read by `call`'s parser when there is one."""
        packed = resp.pack(args)  # first: a command that cannot be encoded owes no reply
        link = self._link or await self._connect()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        link.waiting.append((future, loop.time(), call))
        if call is not None and call.raw:
            link.raw_owed += 1
        if not link.unsent:
            loop.call_soon(self._flush, link)
        link.unsent.append(packed)
        if self._timeout is not None and link.timer is None:
            # One timer per connection, for the oldest reply owed; it re-arms itself for the next.
            link.timer = loop.call_at(loop.time() + self._timeout, self._on_timer, link)
        return future

    def _flush(self, link: _Link) -> None:
        """Writes what send() queued in one write: the partitions of a Produce request each send their
        append in a task of their own, in the same turn of the loop, and go out in one system call."""
        unsent, link.unsent = link.unsent, []
        if link.transport.is_closing():
            return  # dropped meanwhile: its commands have failed already
        link.transport.write(unsent[0] if len(unsent) == 1 else b"".join(unsent))

    async def send_call(self, call: Call[T]) -> asyncio.Future[T]:
        """Sends a Call now (in call order) and returns a future for its parsed reply.

        A connection's first call of a script loads it first, on the same connection: the server may be
        new (a restart, a promoted replica), and a call refused with NOSCRIPT and sent again would run
        after the calls sent behind it. A script flushed later anyway is loaded and its call sent again."""
        if call.script:
            s = scripts.script(call.script)
            link = self._link or await self._connect()
            if s.name not in link.scripts:  # no await between here and the EVALSHA: nothing between
                link.scripts.add(s.name)
                (await self.send("SCRIPT", "LOAD", s.source)).add_done_callback(_quiet)
            # All bytes when the arguments are (an append's are): resp.pack then converts none.
            head = [b"EVALSHA", s.sha.encode(), b"%d" % len(call.keys), *[k.encode() for k in call.keys]]
            return await self._send([*head, *call.args], call)
        return await self._send(_words(call.args), call)

    async def drive(self, steps: Steps[T]) -> T:
        """Runs a procedure's round trips on this connection, each round trip's calls in one write.
        For reads that need no order with the appends: redis-py's pipeline costs about three times the
        broker's CPU of a round trip on the lane (docs/benchmarks.md, "End-to-end latency")."""
        progress = Progress(steps)
        calls = progress.next(None)
        while calls is not None:
            futures = [await self.send_call(call) for call in calls]
            calls = progress.next(await _replies(futures))
        return progress.result

    async def _retry(self, result: asyncio.Future[T], call: Call[T]) -> None:
        s = scripts.script(call.script)
        try:
            await (await self.send("SCRIPT", "LOAD", s.source))
            reply = await (await self.send("EVALSHA", s.sha, len(call.keys), *call.keys, *call.args))
        except Exception as exc:
            if not result.done():
                result.set_exception(exc)
        else:
            if not result.done():
                _settle(result, call, reply)

    async def close(self) -> None:
        link = self._link
        if link is None:
            return
        self._drop(link, RedisConnectionError("lane closed"))
        with contextlib.suppress(Exception):
            await link.connection.disconnect()


async def _replies(futures: list[asyncio.Future[Any]]) -> list[Any]:
    """The replies in order; on a failure the others are retrieved too (no "never retrieved" noise)."""
    try:
        return [await f for f in futures]
    except BaseException:
        for f in futures:
            if not f.done():
                f.cancel()
            elif not f.cancelled():
                f.exception()
        raise


def _words(args: Sequence[Any]) -> Sequence[Any]:
    """The command with a two-word name split (redis-py splits "XINFO STREAM" the same way)."""
    name = args[0]
    if isinstance(name, str) and " " in name:
        return (*name.split(), *args[1:])
    return args


def _failure(reply: Any) -> bool:
    """An error reply other than NOSCRIPT (which the lane answers by loading the script)."""
    return isinstance(reply, ResponseError) and not str(reply).startswith("NOSCRIPT")


def _quiet(done: asyncio.Future[Any]) -> None:
    """A reply nobody awaits: a failure shows on the call sent after it."""
    if not done.cancelled():
        done.exception()


def _settle(result: asyncio.Future[T], call: Call[T], reply: Any) -> None:
    try:
        result.set_result(call.parse(reply))
    except Exception as exc:  # a parser that refuses the reply fails this call only
        result.set_exception(exc)
